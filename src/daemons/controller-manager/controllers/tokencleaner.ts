/**
 * The token cleaner (off by default, as in Kubernetes): deletes bootstrap-token Secrets in
 * kube-system once their `expiration` has passed (an expiration that does not parse counts as
 * passed, as in Kubernetes). A token that has not expired yet is looked at again when it does.
 *
 * Contract: keys are `namespace/name` of token Secrets; one worker. Every delete carries the
 * Secret's uid as a precondition (a Secret re-created under the same name is never hit); 404 and
 * 409 count as done; other failures are retried with backoff.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import { BOOTSTRAP_TOKEN_NAMESPACE, BOOTSTRAP_TOKEN_SECRET_TYPE, msUntilExpiry } from '../../../auth/bootstrap/token-secret.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { keyOf, splitKey, WorkQueue, type HandlerResult, type ResourceRef, type RestClient, type SharedIndexInformer } from '../deps.js';

const SECRETS: ResourceRef = { group: '', version: 'v1', resource: 'secrets' };
const MAX_REQUEUE_MS = 24 * 3600_000;

export interface TokenCleanerOptions {
  now?: () => number;
}

export class TokenCleaner implements Controller {
  readonly name = 'tokencleaner';
  private queue!: WorkQueue;
  private secrets!: SharedIndexInformer;
  private client!: RestClient;
  private log!: Logger;
  private readonly now: () => number;

  constructor(opts: TokenCleanerOptions = {}) { this.now = opts.now ?? Date.now; }

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    this.queue = new WorkQueue({ name: this.name, log: ctx.log });
    this.secrets = ctx.informers.informerFor({ ...SECRETS, namespace: BOOTSTRAP_TOKEN_NAMESPACE, fieldSelector: `type=${BOOTSTRAP_TOKEN_SECRET_TYPE}` });
    this.secrets.addEventHandler({
      onAdd: (s) => this.queue.add(keyOf(s)),
      onUpdate: (_o, s) => this.queue.add(keyOf(s)),
    });
    ctx.informers.start(ctx.signal);
    if (!await this.secrets.waitForSync(ctx.signal)) return;
    await this.queue.runWorkers(1, (key) => this.sync(key), ctx.signal);
  }

  async sync(key: string): Promise<HandlerResult | undefined> {
    const { namespace = '', name } = splitKey(key);
    const s = this.secrets.indexer.get(namespace, name);
    if (!s || (s as { type?: unknown }).type !== BOOTSTRAP_TOKEN_SECRET_TYPE) return undefined;
    const left = msUntilExpiry(s, this.now());
    if (left === undefined) return undefined;
    if (left > 0) return { requeueAfterMs: Math.min(left + 1, MAX_REQUEUE_MS) };
    try {
      await this.client.delete({ ...SECRETS, namespace }, name, { preconditions: { uid: s.metadata?.uid ?? '' } });
      this.log.info({ secret: key }, 'deleted expired bootstrap token');
    } catch (e) {
      if (!(isApiError(e) && (e.code === 404 || e.code === 409))) throw e;
    }
    return undefined;
  }
}

export function newTokenCleaner(opts: TokenCleanerOptions = {}): Controller {
  return new TokenCleaner(opts);
}
