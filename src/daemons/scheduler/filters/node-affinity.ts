/**
 * spec.nodeSelector (every label must be present with that value) and the required node
 * affinity: nodeSelectorTerms are ORed; inside a term, all matchExpressions (on labels) and
 * matchFields (on metadata.name) must hold; a term with neither matches nothing.
 * Operators: In, NotIn (true when the label is absent), Exists, DoesNotExist, and Gt / Lt
 * (the label and the single value parse as integers). The matching itself is shared with the
 * DaemonSet controller (src/api/resources/core/node-placement.ts).
 */
import { nodeSelectorMatches, termMatches } from '../../../api/resources/core/node-placement.js';
import { FITS, type Filter } from './filter.js';

export const REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector";

export const nodeAffinity: Filter = {
  name: 'NodeAffinity',
  filter(pod, node) {
    const n = node.node;
    if (!n) return [REASON_NODE_AFFINITY];
    const spec = pod.pod.spec ?? {};
    if (!nodeSelectorMatches(spec.nodeSelector, n)) return [REASON_NODE_AFFINITY];
    const required = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
    if (required && !(required.nodeSelectorTerms ?? []).some((t) => termMatches(t, n))) return [REASON_NODE_AFFINITY];
    return FITS;
  },
};
