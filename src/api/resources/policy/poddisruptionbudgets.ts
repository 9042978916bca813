/**
 * policy/v1 PodDisruptionBudget (+ policy/v1beta1 served by conversion). The versions differ in
 * what an empty selector means: v1beta1 `{}` selects no pods, v1 `{}` selects all. As Kubernetes
 * does, a v1beta1 `{}` is stored as a selector on a label no pod carries (Exists), and a stored
 * v1 `{}` reads in v1beta1 as "label does not exist" (selects all).
 */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource, statusStrategy } from '../common/define.js';
import { col, num, rec, path } from '../common/table-util.js';
import { isObject, validateLabelSelector } from '../common/validation.js';
import { validateIntOrPercent } from '../apps/workload.js';
import type { KubeObject } from '../types.js';

const PDB_V1BETA1_LABEL = 'pdb.kubernetes.io/deprecated-v1beta1-empty-selector-match';

function selectorIs(sel: unknown, op: 'Exists' | 'DoesNotExist' | 'empty'): boolean {
  if (typeof sel !== 'object' || sel === null || Array.isArray(sel)) return false;
  const s = sel as Record<string, unknown>;
  const labels = s.matchLabels as Record<string, unknown> | undefined, exprs = s.matchExpressions as unknown[] | undefined;
  if (labels && Object.keys(labels).length) return false;
  if (op === 'empty') return !exprs || exprs.length === 0;
  if (!exprs || exprs.length !== 1) return false;
  const e = rec(exprs[0]);
  return e.key === PDB_V1BETA1_LABEL && e.operator === op && (e.values === undefined || (Array.isArray(e.values) && !e.values.length));
}

/** v1beta1 ↔ v1: same fields, the empty-selector meaning swapped via a sentinel label. */
function convertPdb(obj: KubeObject, toVersion: string): KubeObject {
  const out: KubeObject = { ...obj, apiVersion: `policy/${toVersion}` };
  const from = String(obj.apiVersion ?? '').replace(/^policy\//, '');
  if (from === toVersion || !isObject(obj.spec)) return out;
  const spec = { ...obj.spec };
  if (toVersion === 'v1') {
    if (selectorIs(spec.selector, 'empty')) spec.selector = { matchExpressions: [{ key: PDB_V1BETA1_LABEL, operator: 'Exists' }] };
    else if (selectorIs(spec.selector, 'DoesNotExist')) spec.selector = {};
  } else {
    if (selectorIs(spec.selector, 'empty')) spec.selector = { matchExpressions: [{ key: PDB_V1BETA1_LABEL, operator: 'DoesNotExist' }] };
    else if (selectorIs(spec.selector, 'Exists')) spec.selector = {};
  }
  out.spec = spec;
  return out;
}

export const poddisruptionbudgets = defineResource({
  group: 'policy', versions: ['v1', 'v1beta1'], storageVersion: 'v1', kind: 'PodDisruptionBudget', plural: 'poddisruptionbudgets', namespaced: true,
  shortNames: ['pdb'], hasGeneration: true, subresources: { status: true },
  convert: convertPdb,
  validateSpec(obj) {
    const errs: FieldError[] = [];
    const spec = rec(obj.spec);
    if (spec.minAvailable !== undefined && spec.maxUnavailable !== undefined) errs.push(fieldErrors.invalid('spec', spec, 'minAvailable and maxUnavailable cannot be both set'));
    validateIntOrPercent(spec.minAvailable, 'spec.minAvailable', errs);
    validateIntOrPercent(spec.maxUnavailable, 'spec.maxUnavailable', errs);
    validateLabelSelector(spec.selector, 'spec.selector', errs);
    if (spec.unhealthyPodEvictionPolicy !== undefined && !['IfHealthyBudget', 'AlwaysAllow'].includes(String(spec.unhealthyPodEvictionPolicy))) {
      errs.push(fieldErrors.notSupported('spec.unhealthyPodEvictionPolicy', spec.unhealthyPodEvictionPolicy, ['AlwaysAllow', 'IfHealthyBudget']));
    }
    return errs;
  },
  prepareForCreate(obj) { obj.status = { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 }; },
  prepareForUpdate: statusStrategy.prepareForUpdate,
  columns: [
    col('Min Available', 'string', 'The minimum number of pods that must be available simultaneously.', (o) => { const v = path(o, 'spec.minAvailable'); return v === undefined ? 'N/A' : String(v); }),
    col('Max Unavailable', 'string', 'The maximum number of pods that may be unavailable simultaneously.', (o) => { const v = path(o, 'spec.maxUnavailable'); return v === undefined ? 'N/A' : String(v); }),
    col('Allowed Disruptions', 'integer', 'Calculated number of pods that may be disrupted at this time.', (o) => num(path(o, 'status.disruptionsAllowed'))),
  ],
});
