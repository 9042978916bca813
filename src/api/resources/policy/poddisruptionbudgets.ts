/** policy/v1 PodDisruptionBudget. */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource, statusStrategy } from '../common/define.js';
import { col, num, rec, path } from '../common/table-util.js';
import { validateLabelSelector } from '../common/validation.js';
import { validateIntOrPercent } from '../apps/workload.js';

export const poddisruptionbudgets = defineResource({
  group: 'policy', versions: ['v1'], kind: 'PodDisruptionBudget', plural: 'poddisruptionbudgets', namespaced: true,
  shortNames: ['pdb'], hasGeneration: true, subresources: { status: true },
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
