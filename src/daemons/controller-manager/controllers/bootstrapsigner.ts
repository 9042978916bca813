/**
 * The bootstrap signer (off by default, as in Kubernetes): keeps one detached JWS signature of
 * the `kubeconfig` in ConfigMap kube-public/cluster-info per bootstrap token that may sign
 * (`jws-kubeconfig-<id>`), so a node holding only a token can trust the cluster-info it fetched
 * anonymously. Signatures of tokens that are gone, expired or no longer for signing are removed.
 *
 * Contract: one key, one worker; every change to a token Secret (kube-system, type
 * bootstrap.kubernetes.io/token) or to cluster-info queues it. A sync recomputes every signature
 * and writes the ConfigMap back (with the cached resourceVersion) only when one differs; a 409 or
 * 404 is dropped (the event that caused it queues another sync). The sync is queued again when
 * the next token expires, so its signature goes even if the token cleaner is off. A cluster-info
 * without a `kubeconfig` key is left alone. Token secrets never reach the logs.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { computeDetachedSignature } from '../../../auth/bootstrap/jws.js';
import {
  BOOTSTRAP_TOKEN_NAMESPACE, BOOTSTRAP_TOKEN_SECRET_TYPE, CLUSTER_INFO_KUBECONFIG_KEY, CLUSTER_INFO_NAME, CLUSTER_INFO_NAMESPACE,
  JWS_KEY_PREFIX, KEY_TOKEN_ID, KEY_TOKEN_SECRET, KEY_USAGE_SIGNING, msUntilExpiry, secretData, tokenIdOfSecretName,
} from '../../../auth/bootstrap/token-secret.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { WorkQueue, type ResourceRef, type RestClient, type SharedIndexInformer } from '../deps.js';

const CONFIG_MAPS: ResourceRef = { group: '', version: 'v1', resource: 'configmaps' };
const SECRETS: ResourceRef = { group: '', version: 'v1', resource: 'secrets' };
const KEY = `${CLUSTER_INFO_NAMESPACE}/${CLUSTER_INFO_NAME}`;
/** Timers beyond a day are not needed: Node cannot hold longer ones, and a day-late requeue is harmless. */
const MAX_REQUEUE_MS = 24 * 3600_000;

/** A token that may sign at `now`: Kubernetes' validateSecretForSigning. */
export function signingToken(secret: KubeObject, now: number): { id: string; secret: string } | undefined {
  if ((secret as { type?: unknown }).type !== BOOTSTRAP_TOKEN_SECRET_TYPE) return undefined;
  const nameId = tokenIdOfSecretName(secret.metadata?.name ?? '');
  const id = secretData(secret, KEY_TOKEN_ID);
  if (!nameId || !id || id !== nameId) return undefined;
  const tokenSecret = secretData(secret, KEY_TOKEN_SECRET);
  if (!tokenSecret) return undefined;
  if (msUntilExpiry(secret, now) === 0) return undefined;
  if (secretData(secret, KEY_USAGE_SIGNING) !== 'true') return undefined;
  return { id, secret: tokenSecret };
}

export interface BootstrapSignerOptions {
  now?: () => number;
}

export class BootstrapSigner implements Controller {
  readonly name = 'bootstrapsigner';
  private queue!: WorkQueue;
  private secrets!: SharedIndexInformer;
  private configMaps!: SharedIndexInformer;
  private client!: RestClient;
  private log!: Logger;
  private readonly now: () => number;

  constructor(opts: BootstrapSignerOptions = {}) { this.now = opts.now ?? Date.now; }

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    this.queue = new WorkQueue({ name: this.name, log: ctx.log });
    this.secrets = ctx.informers.informerFor({ ...SECRETS, namespace: BOOTSTRAP_TOKEN_NAMESPACE, fieldSelector: `type=${BOOTSTRAP_TOKEN_SECRET_TYPE}` });
    this.configMaps = ctx.informers.informerFor({ ...CONFIG_MAPS, namespace: CLUSTER_INFO_NAMESPACE, fieldSelector: `metadata.name=${CLUSTER_INFO_NAME}` });
    const poke = (): void => this.queue.add(KEY);
    for (const inf of [this.secrets, this.configMaps]) inf.addEventHandler({ onAdd: poke, onUpdate: poke, onDelete: poke });
    ctx.informers.start(ctx.signal);
    const synced = await Promise.all([this.secrets.waitForSync(ctx.signal), this.configMaps.waitForSync(ctx.signal)]);
    if (!synced.every(Boolean)) return;
    await this.queue.runWorkers(1, () => this.sync(), ctx.signal);
  }

  /** Brings the signatures in line with the cached tokens; asks to run again at the next expiry. */
  async sync(): Promise<{ requeueAfterMs: number } | undefined> {
    const cm = this.configMaps.indexer.get(CLUSTER_INFO_NAMESPACE, CLUSTER_INFO_NAME);
    if (!cm) return undefined;
    const data = (cm.data as Record<string, string> | undefined) ?? {};
    const content = data[CLUSTER_INFO_KUBECONFIG_KEY];
    if (content === undefined) return undefined;
    const now = this.now();
    const next: Record<string, string> = {};
    for (const [k, v] of Object.entries(data)) if (!k.startsWith(JWS_KEY_PREFIX)) next[k] = v;
    let nextExpiry: number | undefined;
    for (const s of this.secrets.indexer.list()) {
      const token = signingToken(s, now);
      if (!token || next[JWS_KEY_PREFIX + token.id] !== undefined) continue;
      next[JWS_KEY_PREFIX + token.id] = computeDetachedSignature(content, token.id, token.secret);
      const left = msUntilExpiry(s, now);
      if (left !== undefined) nextExpiry = Math.min(nextExpiry ?? Infinity, left);
    }
    const requeue = nextExpiry === undefined ? undefined : { requeueAfterMs: Math.min(nextExpiry + 1, MAX_REQUEUE_MS) };
    if (sameData(data, next)) return requeue;
    try {
      await this.client.update({ ...CONFIG_MAPS, namespace: CLUSTER_INFO_NAMESPACE }, { ...cm, data: next });
      const ids = Object.keys(next).filter((k) => k.startsWith(JWS_KEY_PREFIX)).map((k) => k.slice(JWS_KEY_PREFIX.length));
      this.log.info({ tokens: ids }, 'signed cluster-info');
    } catch (e) {
      if (!(isApiError(e) && (e.code === 409 || e.code === 404))) throw e;
    }
    return requeue;
  }
}

function sameData(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => b[k] === a[k]);
}

export function newBootstrapSigner(opts: BootstrapSignerOptions = {}): Controller {
  return new BootstrapSigner(opts);
}
