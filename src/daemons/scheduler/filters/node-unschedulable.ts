/**
 * A cordoned node (spec.unschedulable) takes only pods that tolerate the
 * node.kubernetes.io/unschedulable:NoSchedule taint.
 */
import { FITS, type Filter } from './filter.js';
import { tolerated } from '../../../api/resources/core/node-placement.js';

export const REASON_UNSCHEDULABLE = 'node(s) were unschedulable';

export const nodeUnschedulable: Filter = {
  name: 'NodeUnschedulable',
  filter(pod, node) {
    if (node.node?.spec?.unschedulable !== true) return FITS;
    if (tolerated(pod.pod.spec?.tolerations, { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' })) return FITS;
    return [REASON_UNSCHEDULABLE];
  },
};
