/**
 * Bearer tokens for a service account, from the TokenRequest API, renewed before they expire:
 * what kube-controller-manager's dynamic client builder does with
 * --use-service-account-credentials, so that each controller acts as
 * `system:serviceaccount:<namespace>:<name>` with its own RBAC role.
 *
 * As Kubernetes: the account is read and created when missing (kube-system is created too if
 * absent, errors tolerated); tokens are asked for 3600 s; a token is used until 80 % of its
 * lifetime (as the API server answered it, at least 10 minutes) has passed; a failed fetch is
 * retried four times with a doubling backoff from 500 ms. One fetch at a time: concurrent
 * callers share it. `reset()` drops the cached token (the client calls it on a 401, so the next
 * request gets a fresh one). Tokens never reach the logs.
 */
import { pino, type Logger } from 'pino';
import { ApiError } from '../api/meta/status.js';
import type { KubeObject } from '../api/resources/types.js';
import { realClock, type Clock } from './clock.js';
import type { RestClient } from './rest-client.js';

/** A source of bearer tokens a RestClient sends in the Authorization header. */
export interface BearerTokenSource {
  token(signal?: AbortSignal): Promise<string>;
  /** Forget the cached token (it was refused). */
  reset(): void;
}

export interface ServiceAccountTokenSourceOptions {
  /** A client with the right to get/create the account and create its token (the manager's own). */
  client: RestClient;
  namespace: string;
  name: string;
  /** @default 3600 */
  expirationSeconds?: number;
  /** Part of the lifetime left when the token is renewed, in percent. @default 20 */
  leewayPercent?: number;
  clock?: Clock;
  log?: Logger;
}

const CORE = { group: '', version: 'v1' };
const MIN_LIFETIME_MS = 10 * 60_000;
const BACKOFF = { firstMs: 500, factor: 2, steps: 4 };

/** `system:serviceaccount:<ns>:<name>`, the user a service account's token authenticates as. */
export function serviceAccountUsername(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

export class ServiceAccountTokenSource implements BearerTokenSource {
  private cached: { token: string; renewAt: number } | undefined;
  private inflight: Promise<string> | undefined;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly expirationSeconds: number;
  private readonly leewayPercent: number;

  constructor(private readonly o: ServiceAccountTokenSourceOptions) {
    this.clock = o.clock ?? realClock;
    this.log = o.log ?? pino({ level: 'silent' });
    this.expirationSeconds = o.expirationSeconds ?? 3600;
    this.leewayPercent = o.leewayPercent ?? 20;
  }

  token(signal?: AbortSignal): Promise<string> {
    const c = this.cached;
    if (c && this.clock.now() < c.renewAt) return Promise.resolve(c.token);
    // The in-flight fetch is shared; it is not tied to one caller's signal.
    this.inflight ??= this.fetchWithBackoff().finally(() => { this.inflight = undefined; });
    if (!signal) return this.inflight;
    return new Promise<string>((resolve, reject) => {
      if (signal.aborted) { reject(signal.reason ?? new Error('aborted')); return; }
      const onAbort = (): void => reject(signal.reason ?? new Error('aborted'));
      signal.addEventListener('abort', onAbort, { once: true });
      (this.inflight as Promise<string>).then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  reset(): void { this.cached = undefined; }

  private async fetchWithBackoff(): Promise<string> {
    let wait = BACKOFF.firstMs;
    let last: unknown;
    for (let step = 0; step <= BACKOFF.steps; step++) {
      if (step > 0) { await this.clock.sleep(wait); wait *= BACKOFF.factor; }
      try {
        return await this.fetch();
      } catch (e) {
        last = e;
        this.log.info({ namespace: this.o.namespace, serviceAccount: this.o.name, err: (e as Error).message }, 'getting a service-account token failed');
      }
    }
    throw new Error(`failed to get token for ${this.o.namespace}/${this.o.name}: ${(last as Error)?.message ?? 'unknown error'}`);
  }

  private async fetch(): Promise<string> {
    await getOrCreateServiceAccount(this.o.client, this.o.namespace, this.o.name, this.log);
    const started = this.clock.now();
    const tr = await this.o.client.create<KubeObject & { status?: { token?: string; expirationTimestamp?: string } }>(
      { ...CORE, resource: 'serviceaccounts', namespace: this.o.namespace },
      { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: this.expirationSeconds } },
      { name: this.o.name, subresource: 'token' },
    );
    const token = tr.status?.token;
    if (!token) throw new Error('the TokenRequest answer has no token');
    const expires = Date.parse(tr.status?.expirationTimestamp ?? '');
    let lifetime = Number.isNaN(expires) ? this.expirationSeconds * 1000 : expires - Date.now();
    // A lifetime shorter than the API server's minimum means clock skew: pin it, as Kubernetes.
    if (lifetime < MIN_LIFETIME_MS) lifetime = MIN_LIFETIME_MS;
    const leeway = Math.floor(lifetime * this.leewayPercent / 100);
    this.cached = { token, renewAt: started + lifetime - leeway };
    return token;
  }
}

/** The account, created when missing (and its namespace, best effort), as Kubernetes does. */
export async function getOrCreateServiceAccount(client: RestClient, namespace: string, name: string, log?: Logger): Promise<KubeObject> {
  const ref = { ...CORE, resource: 'serviceaccounts', namespace };
  try {
    return await client.get(ref, name);
  } catch (e) {
    if (!(e instanceof ApiError) || e.status.code !== 404) throw e;
  }
  try {
    await client.get({ ...CORE, resource: 'namespaces' }, namespace);
  } catch (e) {
    if (e instanceof ApiError && e.status.code === 404) {
      await client.create({ ...CORE, resource: 'namespaces' }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } })
        .catch((err: Error) => { if (!(err instanceof ApiError && err.status.code === 409)) log?.info({ namespace, err: err.message }, 'creating the namespace failed'); });
    }
  }
  try {
    return await client.create(ref, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { namespace, name } });
  } catch (e) {
    // Another instance raced us to it: read what it made.
    if (e instanceof ApiError && e.status.code === 409) return client.get(ref, name);
    throw e;
  }
}
