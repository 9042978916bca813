/**
 * The authorization modes that need more than the options: RBAC and Node read objects from the
 * store, ABAC a policy file, Webhook a remote service. Each mode has a factory (its own file)
 * registered in MODE_FACTORIES by its --authorization-mode name; only the named modes are built.
 *
 * Life cycle: `buildAuthorizerModes` runs before anything listens (a bad policy or config file
 * is a start-up error naming its option); the authorizers exist from then on, so the request
 * chain and the review resources can hold them. `start(store)` runs once the object store is
 * open and resolves when every mode can answer (its caches are synced), before serving starts.
 * Modes not registered here are AlwaysAllow and AlwaysDeny (auth-setup.ts) or refused there.
 */
import type { Logger } from 'pino';
import type { Authorizer } from '../../auth/authorizer.js';
import type { ApiserverConfig } from '../../flags/apiserver.js';
import type { ObjectStore } from '../../storage/object-store-types.js';
import { nodeAuthorizerMode } from '../../auth/authorizers/node/node-authorizer.js';
import { abacMode, checkModeFiles, webhookMode } from './abac-webhook-modes.js';
import { rbacMode } from '../../auth/authorizers/rbac/rbac-mode.js';

export interface AuthorizerMode {
  readonly authorizer: Authorizer;
  /** Called once with the open object store; resolves when the mode can answer. */
  start?(store: ObjectStore): Promise<void>;
  stop?(): void | Promise<void>;
}

export type AuthorizerModeFactory = (config: ApiserverConfig, log: Logger) => AuthorizerMode | Promise<AuthorizerMode>;

/** --authorization-mode name → factory. */
export const MODE_FACTORIES: Readonly<Record<string, AuthorizerModeFactory>> = {
  Node: (_config, log) => nodeAuthorizerMode(log),
  ABAC: abacMode,
  Webhook: webhookMode,
  RBAC: rbacMode,
};

export interface AuthorizerModes {
  /** For buildAuthorizer's extraModes. */
  readonly authorizers: Record<string, Authorizer>;
  start(store: ObjectStore): Promise<void>;
  stop(): Promise<void>;
}

export async function buildAuthorizerModes(config: ApiserverConfig, modes: readonly string[], log: Logger): Promise<AuthorizerModes> {
  checkModeFiles(config, modes);
  const built = new Map<string, AuthorizerMode>();
  for (const name of modes) {
    const factory = MODE_FACTORIES[name];
    if (!factory || built.has(name)) continue;
    built.set(name, await factory(config, log.child({ component: `authorizer-${name.toLowerCase()}` })));
  }
  const authorizers: Record<string, Authorizer> = {};
  for (const [name, m] of built) authorizers[name] = m.authorizer;
  return {
    authorizers,
    async start(store: ObjectStore): Promise<void> {
      await Promise.all([...built.values()].map((m) => m.start?.(store)));
    },
    async stop(): Promise<void> {
      for (const m of built.values()) await m.stop?.();
    },
  };
}
