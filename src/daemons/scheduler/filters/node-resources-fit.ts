/**
 * The pod's effective requests must fit in the node's allocatable minus what the pods already
 * on it (bound or assumed) request, and the node must have room for one more pod
 * (allocatable "pods"). A resource the pod does not request is not checked. Every shortage
 * is reported ("Too many pods", "Insufficient cpu", "Insufficient memory", ...).
 */
import { PODS } from '../resources.js';
import { FITS, type Filter } from './filter.js';

export const REASON_TOO_MANY_PODS = 'Too many pods';

export const nodeResourcesFit: Filter = {
  name: 'NodeResourcesFit',
  filter(pod, node) {
    let reasons: string[] | undefined;
    if (node.pods.size + 1 > (node.allocatable[PODS] ?? 0)) reasons = [REASON_TOO_MANY_PODS];
    // podRequests lists cpu, memory, ephemeral-storage first, then the rest by name.
    for (const name in pod.requests) {
      const want = pod.requests[name] ?? 0;
      if (want <= 0 || name === PODS) continue;
      const free = (node.allocatable[name] ?? 0) - (node.requested[name] ?? 0);
      if (want > free) (reasons ??= []).push(`Insufficient ${name}`);
    }
    return reasons ?? FITS;
  },
};
