/**
 * What the endpoint and endpointslice controllers share about a Service and its pods, as
 * Kubernetes' two controllers share it: which services select a pod (a service with no, or an
 * empty, selector selects nothing: its endpoints are someone else's to write), which pods are
 * published at all, which container port a service port reaches on a pod, the headless
 * label, and what queues a service for another sync.
 */
import { selectorFromSet } from '../../../api/meta/label-selector.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { deletedObject, keyOf, type SharedIndexInformer } from '../deps.js';

type Dict = Record<string, unknown>;
const rec = (v: unknown): Dict => (typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Dict : {});
const arr = (v: unknown): Dict[] => (Array.isArray(v) ? v.map(rec) : []);

/** The label both controllers put on the Endpoints and EndpointSlices of a headless service. */
export const HEADLESS_LABEL = 'service.kubernetes.io/headless';

export function isHeadless(svc: KubeObject): boolean {
  const ip = rec(svc.spec).clusterIP;
  return !ip || ip === 'None';
}

export function serviceSelector(svc: KubeObject): Record<string, string> | undefined {
  const spec = svc.spec;
  const sel = typeof spec === 'object' && spec !== null ? (spec as { selector?: Record<string, string> }).selector : undefined;
  return sel && Object.keys(sel).length ? sel : undefined;
}

/** The services in the pod's namespace (from the informer's cache) whose selector takes the pod. */
export function servicesSelecting(services: SharedIndexInformer, pod: KubeObject): KubeObject[] {
  return services.indexer.listNamespace(pod.metadata?.namespace ?? '').filter((svc) => {
    const sel = serviceSelector(svc);
    return sel !== undefined && selectorFromSet(sel).matches(pod.metadata?.labels);
  });
}

/**
 * Queues a service's key when it changes, and the keys of the services selecting a pod when
 * the pod changes (under its old labels and its new ones, so a service it leaves syncs too).
 */
export function queueServiceChanges(services: SharedIndexInformer, pods: SharedIndexInformer, queue: { add(key: string): void }): void {
  services.addEventHandler({
    onAdd: (s) => queue.add(keyOf(s)),
    onUpdate: (_o, s) => queue.add(keyOf(s)),
    onDelete: (s) => queue.add(keyOf(deletedObject(s))),
  });
  const podChanged = (pod: KubeObject): void => { for (const svc of servicesSelecting(services, pod)) queue.add(keyOf(svc)); };
  pods.addEventHandler({
    onAdd: podChanged,
    onUpdate: (o, p) => { if (o.metadata?.resourceVersion !== p.metadata?.resourceVersion) { podChanged(p); podChanged(o); } },
    onDelete: (p) => podChanged(deletedObject(p)),
  });
}

/** The pod's (first) IP: status.podIP, else status.podIPs[0].ip. */
export function podIp(pod: KubeObject): string {
  const st = rec(pod.status);
  return String(st.podIP || arr(st.podIPs)[0]?.ip || '');
}

/** Whether a pod is published at all: not finished, with an IP, and not terminating unless asked. */
export function podInEndpoints(pod: KubeObject, includeTerminating: boolean): boolean {
  if (!includeTerminating && pod.metadata?.deletionTimestamp) return false;
  if (!podIp(pod)) return false;
  const phase = String(rec(pod.status).phase ?? '');
  return phase !== 'Succeeded' && phase !== 'Failed';
}

/**
 * The container port a service port reaches on this pod: a number as is, a name looked up in
 * the containers and the sidecar init containers (restartPolicy Always) with the same protocol;
 * undefined when the pod has no such port.
 */
export function resolveTargetPort(pod: KubeObject, svcPort: Dict): number | undefined {
  const target = svcPort.targetPort ?? svcPort.port;
  if (typeof target === 'number') return target;
  if (typeof target !== 'string') return undefined;
  if (/^\d+$/.test(target)) return Number(target);
  const protocol = typeof svcPort.protocol === 'string' && svcPort.protocol ? svcPort.protocol : 'TCP';
  const spec = rec(pod.spec);
  const sidecars = arr(spec.initContainers).filter((c) => c.restartPolicy === 'Always');
  for (const c of [...arr(spec.containers), ...sidecars]) {
    for (const p of arr(c.ports)) {
      if (p.name === target && (typeof p.protocol === 'string' && p.protocol ? p.protocol : 'TCP') === protocol && typeof p.containerPort === 'number') return p.containerPort;
    }
  }
  return undefined;
}
