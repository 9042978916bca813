/**
 * Which pods a Service selects, as the endpoint and endpointslice controllers both need it: a
 * service with no (or an empty) selector selects nothing, since its endpoints are someone
 * else's to write.
 */
import { selectorFromSet } from '../../../api/meta/label-selector.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { SharedIndexInformer } from '../deps.js';

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
