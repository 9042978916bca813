/**
 * A pod's QoS class as Kubernetes derives it from its containers' resources: BestEffort with no
 * requests or limits anywhere, Guaranteed when every container limits cpu and memory with any
 * request equal to the limit, Burstable otherwise. Used by the API server (status on create)
 * and the node agent (the status it reports).
 */
import { arr, rec } from '../common/table-util.js';

export function qosClass(spec: unknown): string {
  const s = rec(spec);
  const cs = [...arr(s.containers), ...arr(s.initContainers)].map(rec);
  let any = false, guaranteed = true;
  for (const c of cs) {
    const r = rec(c.resources), req = rec(r.requests), lim = rec(r.limits);
    if (Object.keys(req).length || Object.keys(lim).length) any = true;
    for (const k of ['cpu', 'memory']) {
      if (lim[k] === undefined) guaranteed = false;
      else if (req[k] !== undefined && String(req[k]) !== String(lim[k])) guaranteed = false;
    }
  }
  if (!any) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}
