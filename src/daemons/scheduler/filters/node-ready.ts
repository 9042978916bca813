/**
 * Nodes must report condition Ready=True. A pod that tolerates the not-ready taint
 * (node.kubernetes.io/not-ready, as DaemonSet pods do) may still go there.
 */
import { FITS, type Filter } from './filter.js';
import { tolerated } from '../../../api/resources/core/node-placement.js';

export const REASON_NOT_READY = 'node(s) were not ready';
const NOT_READY_KEY = 'node.kubernetes.io/not-ready';

export const nodeReady: Filter = {
  name: 'NodeReady',
  filter(pod, node) {
    const ready = node.node?.status?.conditions?.find((c) => c.type === 'Ready');
    if (ready?.status === 'True') return FITS;
    const tol = pod.pod.spec?.tolerations;
    if (tolerated(tol, { key: NOT_READY_KEY, effect: 'NoSchedule' }) || tolerated(tol, { key: NOT_READY_KEY, effect: 'NoExecute' })) return FITS;
    return [REASON_NOT_READY];
  },
};
