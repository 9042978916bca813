/**
 * The endpoints controller: for every Service with a selector, keeps an Endpoints object of
 * the same name listing the selected pods' IPs, ready ones in `addresses` and the others in
 * `notReadyAddresses` (all in `addresses` with `publishNotReadyAddresses`), with the ports
 * each pod actually serves (a named targetPort is looked up in that pod's containers), pods
 * with the same port set grouped into one subset. Services without a selector are left alone
 * (users manage their Endpoints); the Endpoints of a deleted Service are removed.
 *
 * Contract: one service key is synced by one worker at a time; a sync reads only the informer
 * caches and writes the Endpoints only when its content changed.
 */
import type { Logger } from 'pino';
import { selectorFromSet } from '../../../api/meta/label-selector.js';
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { deletedObject, keyOf, splitKey, WorkQueue, type ResourceRef, type RestClient, type SharedIndexInformer } from '../deps.js';
import { canonicalJson, isPodReady } from './controller-utils.js';
import { HEADLESS_LABEL, isHeadless, podInEndpoints, podIp, resolveTargetPort, serviceSelector, queueServiceChanges } from './service-selector.js';

const SERVICES: ResourceRef = { group: '', version: 'v1', resource: 'services' };
const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods' };
const ENDPOINTS: ResourceRef = { group: '', version: 'v1', resource: 'endpoints' };

/** Annotation of Endpoints used as leader-election locks: never ours to delete. */
export const LEADER_ANNOTATION = 'control-plane.alpha.kubernetes.io/leader';
/** Most addresses one Endpoints object holds; beyond, it is truncated and annotated. */
export const MAX_ENDPOINTS_CAPACITY = 1000;
export const OVER_CAPACITY_ANNOTATION = 'endpoints.kubernetes.io/over-capacity';

type Dict = Record<string, unknown>;

interface EndpointPort { name?: string; port: number; protocol: string; appProtocol?: string }
interface EndpointAddress { ip: string; hostname?: string; nodeName?: string; targetRef: Dict }
export interface EndpointSubset { addresses?: EndpointAddress[]; notReadyAddresses?: EndpointAddress[]; ports?: EndpointPort[] }

function rec(v: unknown): Dict { return typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Dict : {}; }
function arr(v: unknown): Dict[] { return Array.isArray(v) ? v.map(rec) : []; }

function addressOf(pod: KubeObject, svc: KubeObject): EndpointAddress {
  const spec = rec(pod.spec);
  const a: EndpointAddress = {
    ip: podIp(pod),
    targetRef: { kind: 'Pod', namespace: pod.metadata?.namespace ?? '', name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '' },
  };
  if (spec.nodeName) a.nodeName = String(spec.nodeName);
  // A hostname is published only for pods that chose this service as their subdomain.
  if (spec.hostname && spec.subdomain === svc.metadata?.name) a.hostname = String(spec.hostname);
  return a;
}

function compareAddresses(a: EndpointAddress, b: EndpointAddress): number {
  if (a.ip !== b.ip) return a.ip < b.ip ? -1 : 1;
  return String(a.targetRef.uid).localeCompare(String(b.targetRef.uid));
}

/** The subsets of a service given the pods of its namespace (pure; tests call it directly). */
export function computeSubsets(svc: KubeObject, pods: readonly KubeObject[]): EndpointSubset[] {
  const sel = serviceSelector(svc);
  if (!sel) return [];
  const matches = selectorFromSet(sel);
  const spec = rec(svc.spec);
  const publishNotReady = spec.publishNotReadyAddresses === true;
  const svcPorts = arr(spec.ports);
  // Only a headless service may list addresses without ports.
  if (svcPorts.length === 0 && spec.clusterIP !== 'None') return [];
  const groups = new Map<string, { ports: EndpointPort[]; ready: EndpointAddress[]; notReady: EndpointAddress[] }>();
  for (const pod of pods) {
    if (!matches.matches(pod.metadata?.labels) || !podInEndpoints(pod, publishNotReady)) continue;
    const ports: EndpointPort[] = [];
    for (const sp of svcPorts) {
      const port = resolveTargetPort(pod, sp);
      if (port === undefined) continue;
      const ep: EndpointPort = { port, protocol: String(sp.protocol ?? 'TCP') };
      if (sp.name) ep.name = String(sp.name);
      if (sp.appProtocol) ep.appProtocol = String(sp.appProtocol);
      ports.push(ep);
    }
    // A service with ports none of which this pod serves gets no address for it.
    if (svcPorts.length > 0 && ports.length === 0) continue;
    ports.sort((a, b) => (a.name ?? '').localeCompare(b.name ?? '') || a.port - b.port || a.protocol.localeCompare(b.protocol));
    const key = canonicalJson(ports);
    let g = groups.get(key);
    if (!g) groups.set(key, g = { ports, ready: [], notReady: [] });
    const addr = addressOf(pod, svc);
    if (publishNotReady || isPodReady(pod)) g.ready.push(addr); else g.notReady.push(addr);
  }
  return [...groups.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, g]) => {
    const s: EndpointSubset = {};
    if (g.ready.length) s.addresses = g.ready.sort(compareAddresses);
    if (g.notReady.length) s.notReadyAddresses = g.notReady.sort(compareAddresses);
    if (g.ports.length) s.ports = g.ports;
    return s;
  });
}

/**
 * Caps the number of addresses at MAX_ENDPOINTS_CAPACITY, keeping ready addresses first and
 * sharing the room among subsets in proportion to their size. Returns whether it cut.
 */
export function truncateSubsets(subsets: EndpointSubset[], max = MAX_ENDPOINTS_CAPACITY): boolean {
  const ready = subsets.reduce((n, s) => n + (s.addresses?.length ?? 0), 0);
  const notReady = subsets.reduce((n, s) => n + (s.notReadyAddresses?.length ?? 0), 0);
  if (ready + notReady <= max) return false;
  const cutReady = ready > max;
  const room = cutReady ? max : max - ready;
  const total = cutReady ? ready : notReady;
  let left = room;
  for (const s of subsets) {
    const list = cutReady ? s.addresses ?? [] : s.notReadyAddresses ?? [];
    const share = Math.min(Math.ceil(list.length / total * room), left);
    const kept = list.slice(0, share);
    left -= kept.length;
    if (cutReady) { s.addresses = kept; delete s.notReadyAddresses; } else if (kept.length) s.notReadyAddresses = kept; else delete s.notReadyAddresses;
    if (cutReady && !kept.length) delete s.addresses;
  }
  return true;
}

function endpointsLabels(svc: KubeObject): Record<string, string> {
  const labels: Record<string, string> = { ...(svc.metadata?.labels ?? {}) };
  if (isHeadless(svc)) labels[HEADLESS_LABEL] = ''; else delete labels[HEADLESS_LABEL];
  return labels;
}

export class EndpointController implements Controller {
  readonly name = 'endpoint';
  private queue!: WorkQueue;
  private services!: SharedIndexInformer;
  private pods!: SharedIndexInformer;
  private endpoints!: SharedIndexInformer;
  private client!: RestClient;
  private log!: Logger;

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    this.queue = new WorkQueue({ name: this.name, log: ctx.log });
    this.services = ctx.informers.informerFor(SERVICES);
    this.pods = ctx.informers.informerFor(PODS);
    this.endpoints = ctx.informers.informerFor(ENDPOINTS);
    queueServiceChanges(this.services, this.pods, this.queue);
    // Someone else deleted our Endpoints: put them back. (Updates are not watched: annotation
    // leader locks are Endpoints without a Service and are renewed every few seconds.)
    this.endpoints.addEventHandler({ onDelete: (e) => this.queue.add(keyOf(deletedObject(e))) });
    ctx.informers.start(ctx.signal);
    const synced = await Promise.all([this.services, this.pods, this.endpoints].map((i) => i.waitForSync(ctx.signal)));
    if (!synced.every(Boolean)) return;
    // Endpoints left behind by services deleted while we were down.
    for (const ep of this.endpoints.indexer.list()) {
      if (!this.services.indexer.getByKey(keyOf(ep)) && !ep.metadata?.annotations?.[LEADER_ANNOTATION]) this.queue.add(keyOf(ep));
    }
    await this.queue.runWorkers(ctx.config.concurrentEndpointSyncs, (key) => this.sync(key), ctx.signal);
  }

  /** One reconcile of the service `namespace/name`. Throws to be retried with backoff. */
  async sync(key: string): Promise<void> {
    const { namespace = '', name } = splitKey(key);
    const ref = { ...ENDPOINTS, namespace };
    const svc = this.services.indexer.getByKey(key);
    const current = this.endpoints.indexer.getByKey(key);
    if (!svc) {
      // The service is gone, so are its Endpoints (whoever wrote them), but never a leader lock.
      if (!current || current.metadata?.annotations?.[LEADER_ANNOTATION]) return;
      try {
        await this.client.delete(ref, name, { preconditions: { uid: current.metadata?.uid ?? '' } });
      } catch (e) {
        if (!(isApiError(e) && (e.code === 404 || e.code === 409))) throw e;
      }
      return;
    }
    if (!serviceSelector(svc) || svc.metadata?.deletionTimestamp) return;
    const subsets = computeSubsets(svc, this.pods.indexer.listNamespace(namespace));
    const truncated = truncateSubsets(subsets);
    const labels = endpointsLabels(svc);
    const annotations: Record<string, string> = { ...(current?.metadata?.annotations ?? {}) };
    if (truncated) annotations[OVER_CAPACITY_ANNOTATION] = 'truncated'; else delete annotations[OVER_CAPACITY_ANNOTATION];
    if (current && canonicalJson(current.subsets ?? []) === canonicalJson(subsets) && canonicalJson(current.metadata?.labels ?? {}) === canonicalJson(labels)
      && canonicalJson(current.metadata?.annotations ?? {}) === canonicalJson(annotations)) return;
    const meta = { name, namespace, labels, ...(Object.keys(annotations).length ? { annotations } : {}) };
    const body: KubeObject = { apiVersion: 'v1', kind: 'Endpoints', metadata: meta, subsets };
    try {
      if (current) {
        await this.client.update(ref, { ...body, metadata: { ...current.metadata, ...meta, annotations } });
      } else {
        await this.client.create(ref, body);
      }
    } catch (e) {
      // 403: the namespace is terminating; nothing to publish there any more.
      if (isApiError(e) && e.code === 403 && !current) return;
      if (isApiError(e) && (e.code === 409 || e.code === 404)) { this.log.debug({ key, err: e.message }, 'endpoints changed meanwhile; retrying'); }
      throw e;
    }
  }
}

export function newEndpointController(): Controller {
  return new EndpointController();
}
