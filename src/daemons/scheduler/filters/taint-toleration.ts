/**
 * Every NoSchedule and NoExecute taint of the node must be tolerated by the pod
 * (PreferNoSchedule taints only matter for scoring). The first untolerated taint is reported.
 */
import { FITS, type Filter } from './filter.js';
import { tolerated } from '../../../api/resources/core/node-placement.js';

export const taintToleration: Filter = {
  name: 'TaintToleration',
  filter(pod, node) {
    for (const taint of node.node?.spec?.taints ?? []) {
      if (taint.effect !== 'NoSchedule' && taint.effect !== 'NoExecute') continue;
      if (!tolerated(pod.pod.spec?.tolerations, taint)) return [`node(s) had untolerated taint {${taint.key}: ${taint.value ?? ''}}`];
    }
    return FITS;
  },
};
