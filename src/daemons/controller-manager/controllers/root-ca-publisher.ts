/**
 * The root CA publisher: every namespace that is not terminating holds a ConfigMap
 * `kube-root-ca.crt` whose `ca.crt` is the cluster's root CA bundle (PEM), so that pods can
 * verify the API server at kubernetes.default.svc without a token Secret.
 *
 * The bundle is --root-ca-file when set, else the CA this controller manager trusts for its own
 * API server connection (ctx.apiServerCa, from the coreconfig). With neither, the controller
 * logs once and does nothing. A --root-ca-file without a parseable PEM certificate fails `run`.
 *
 * Contract: keys are namespace names; one worker. A sync creates the ConfigMap when missing
 * (AlreadyExists, and 403/404 from a namespace being deleted, count as success) or, when
 * `ca.crt` differs or the description annotation is missing, writes them back with the cached
 * resourceVersion (a 409 fails the sync, which requeues it with backoff). Other data keys,
 * labels and annotations are never touched.
 *
 * Decision: Kubernetes replaces the whole `data` map when it repairs the ConfigMap; we only
 * restore `ca.crt`, so keys that users or tools add survive.
 */
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import { ROOT_CA_CONFIG_MAP } from '../../../api/resources/core/configmaps.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { splitPemCertificates } from '../../../util/pki.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { deletedObject, keyOf, WorkQueue, type ResourceRef, type RestClient, type SharedIndexInformer } from '../deps.js';

const NAMESPACES: ResourceRef = { group: '', version: 'v1', resource: 'namespaces' };
const CONFIG_MAPS: ResourceRef = { group: '', version: 'v1', resource: 'configmaps' };

export { ROOT_CA_CONFIG_MAP };
export const ROOT_CA_KEY = 'ca.crt';
export const DESCRIPTION_ANNOTATION = 'kubernetes.io/description';
export const ROOT_CA_DESCRIPTION = 'CA bundle for verifying the kube-apiserver through in-cluster endpoints '
  + '(the kubernetes.default.svc name or the service IP). Other uses are not promised to work the same in every Kubernetes distribution.';

function isActive(ns: KubeObject): boolean {
  return !ns.metadata?.deletionTimestamp && (ns.status as { phase?: string } | undefined)?.phase !== 'Terminating';
}

/** Reads --root-ca-file; throws one line naming the option when it holds no usable certificate. */
export async function readRootCaFile(path: string): Promise<Buffer> {
  const pem = await readFile(path).catch((e: NodeJS.ErrnoException) => {
    throw new Error(`--root-ca-file ${path}: cannot read: ${e.code ?? e.message}`);
  });
  const blocks = splitPemCertificates(pem.toString('utf8'));
  if (blocks.length === 0) throw new Error(`--root-ca-file ${path}: no PEM certificate found`);
  for (const b of blocks) {
    try { new X509Certificate(b); } catch (e) { throw new Error(`--root-ca-file ${path}: bad certificate: ${(e as Error).message}`); }
  }
  return pem;
}

export class RootCaPublisher implements Controller {
  readonly name = 'root-ca-cert-publisher';
  private queue!: WorkQueue;
  private namespaces!: SharedIndexInformer;
  private configMaps!: SharedIndexInformer;
  private client!: RestClient;
  private log!: Logger;
  private pem = '';

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    const ca = ctx.config.rootCaFile ? await readRootCaFile(ctx.config.rootCaFile) : ctx.apiServerCa;
    if (!ca || ca.length === 0) {
      ctx.log.warn('no --root-ca-file and no certificate authority in the coreconfig: kube-root-ca.crt is not published');
      await new Promise<void>((resolve) => { if (ctx.signal.aborted) resolve(); else ctx.signal.addEventListener('abort', () => resolve(), { once: true }); });
      return;
    }
    this.pem = ca.toString('utf8');
    this.queue = new WorkQueue({ name: this.name, log: ctx.log });
    this.namespaces = ctx.informers.informerFor(NAMESPACES);
    // The shared ConfigMap informer, as in Kubernetes; the handlers pick out our name.
    this.configMaps = ctx.informers.informerFor(CONFIG_MAPS);
    this.namespaces.addEventHandler({
      onAdd: (ns) => this.queue.add(keyOf(ns)),
      onUpdate: (_o, ns) => this.queue.add(keyOf(ns)),
    });
    const ours = (cm: KubeObject): void => {
      if (cm.metadata?.name === ROOT_CA_CONFIG_MAP && cm.metadata.namespace) this.queue.add(cm.metadata.namespace);
    };
    this.configMaps.addEventHandler({
      onAdd: ours,
      onUpdate: (_o, cm) => ours(cm),
      onDelete: (x) => ours(deletedObject(x)),
    });
    ctx.informers.start(ctx.signal);
    const synced = await Promise.all([this.namespaces.waitForSync(ctx.signal), this.configMaps.waitForSync(ctx.signal)]);
    if (!synced.every(Boolean)) return;
    // One worker, as in Kubernetes: one small write per namespace, rarely.
    await this.queue.runWorkers(1, (key) => this.sync(key), ctx.signal);
  }

  async sync(namespace: string): Promise<void> {
    const ns = this.namespaces.indexer.getByKey(namespace);
    if (!ns || !isActive(ns)) return;
    const cm = this.configMaps.indexer.get(namespace, ROOT_CA_CONFIG_MAP);
    if (!cm) { await this.create(namespace); return; }
    const data = (cm.data as Record<string, string> | undefined) ?? {};
    const annotations = cm.metadata?.annotations ?? {};
    if (data[ROOT_CA_KEY] === this.pem && annotations[DESCRIPTION_ANNOTATION]) return;
    const repaired: KubeObject = {
      ...cm,
      metadata: { ...cm.metadata, annotations: { ...annotations, [DESCRIPTION_ANNOTATION]: annotations[DESCRIPTION_ANNOTATION] || ROOT_CA_DESCRIPTION } },
      data: { ...data, [ROOT_CA_KEY]: this.pem },
    };
    try {
      await this.client.update({ ...CONFIG_MAPS, namespace }, repaired);
      this.log.info({ namespace }, 'restored kube-root-ca.crt');
    } catch (e) {
      // Deleted meanwhile: the delete event queues this namespace again.
      if (isApiError(e) && e.code === 404) return;
      throw e;
    }
  }

  private async create(namespace: string): Promise<void> {
    try {
      await this.client.create({ ...CONFIG_MAPS, namespace }, {
        apiVersion: 'v1', kind: 'ConfigMap',
        metadata: { name: ROOT_CA_CONFIG_MAP, namespace, annotations: { [DESCRIPTION_ANNOTATION]: ROOT_CA_DESCRIPTION } },
        data: { [ROOT_CA_KEY]: this.pem },
      });
      this.log.info({ namespace }, 'published kube-root-ca.crt');
    } catch (e) {
      // 409: someone was faster (the add event checks its content); 403/404: namespace going away.
      if (isApiError(e) && (e.code === 409 || e.code === 403 || e.code === 404)) return;
      throw e;
    }
  }
}

export function newRootCaPublisher(): Controller {
  return new RootCaPublisher();
}
