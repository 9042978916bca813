/**
 * The ABAC and Webhook authorization modes from the options (registered in authorizer-modes.ts).
 * Their files are read before anything listens: a missing or bad file stops the start with one
 * line naming the option (and for ABAC the line at fault). As Kubernetes, a mode's file is
 * required with the mode and refused without it.
 */
import type { Logger } from 'pino';
import { AbacAuthorizer, loadPolicyFile } from '../../auth/authorizers/abac.js';
import { WebhookAuthorizer } from '../../auth/authorizers/webhook.js';
import { loadCoreconfig } from '../../client/coreconfig.js';
import type { ApiserverConfig } from '../../flags/apiserver.js';
import type { AuthorizerMode } from './authorizer-modes.js';
import { StartupError } from './serving-options.js';

const POLICY_FILE = '--authorization-policy-file';
const WEBHOOK_FILE = '--authorization-webhook-config-file';

/** A mode's file given without the mode (Kubernetes refuses to start then). */
export function checkModeFiles(config: ApiserverConfig, modes: readonly string[]): void {
  if (config.authorizationPolicyFile && !modes.includes('ABAC')) throw new StartupError(POLICY_FILE, 'cannot be given without --authorization-mode ABAC');
  if (config.authorizationWebhookConfigFile && !modes.includes('Webhook')) throw new StartupError(WEBHOOK_FILE, 'cannot be given without --authorization-mode Webhook');
}

export async function abacMode(config: ApiserverConfig, log: Logger): Promise<AuthorizerMode> {
  const file = config.authorizationPolicyFile;
  if (!file) throw new StartupError(POLICY_FILE, 'required by --authorization-mode ABAC');
  let parsed;
  try {
    parsed = await loadPolicyFile(file);
  } catch (e) {
    throw new StartupError(POLICY_FILE, (e as Error).message, { cause: e });
  }
  if (parsed.unversionedLines > 0) log.warn({ file, lines: parsed.unversionedLines }, `policy file ${file} contains unversioned rules (legacy format)`);
  log.info({ file, policies: parsed.policies.length }, 'ABAC policy loaded');
  return { authorizer: new AbacAuthorizer(parsed.policies) };
}

export async function webhookMode(config: ApiserverConfig, log: Logger): Promise<AuthorizerMode> {
  const file = config.authorizationWebhookConfigFile;
  if (!file) throw new StartupError(WEBHOOK_FILE, 'required by --authorization-mode Webhook');
  let conn;
  try {
    conn = await loadCoreconfig({ path: file });
  } catch (e) {
    throw new StartupError(WEBHOOK_FILE, (e as Error).message, { cause: e });
  }
  const authorizer = new WebhookAuthorizer(conn, {
    authorizedTtlMs: config.authorizationWebhookCacheAuthorizedTtl,
    unauthorizedTtlMs: config.authorizationWebhookCacheUnauthorizedTtl,
    log,
  });
  return { authorizer, stop: () => authorizer.close() };
}
