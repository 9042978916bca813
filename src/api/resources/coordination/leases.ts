/** coordination.k8s.io/v1 Lease (node heartbeats, leader election). */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { col, rec, str, path } from '../common/table-util.js';

export const leases = defineResource({
  group: 'coordination.k8s.io', versions: ['v1'], kind: 'Lease', plural: 'leases', namespaced: true,
  validateSpec(obj) {
    const errs: FieldError[] = [];
    const spec = rec(obj.spec);
    if (spec.leaseDurationSeconds !== undefined && (!Number.isInteger(spec.leaseDurationSeconds) || (spec.leaseDurationSeconds as number) <= 0)) errs.push(fieldErrors.invalid('spec.leaseDurationSeconds', spec.leaseDurationSeconds, 'must be greater than 0'));
    if (spec.leaseTransitions !== undefined && (!Number.isInteger(spec.leaseTransitions) || (spec.leaseTransitions as number) < 0)) errs.push(fieldErrors.invalid('spec.leaseTransitions', spec.leaseTransitions, 'must be greater than or equal to 0'));
    for (const k of ['acquireTime', 'renewTime']) {
      const v = spec[k];
      if (v !== undefined && v !== null && (typeof v !== 'string' || Number.isNaN(Date.parse(v)))) errs.push(fieldErrors.invalid(`spec.${k}`, v, 'must be an RFC3339 micro time'));
    }
    return errs;
  },
  columns: [col('Holder', 'string', 'The holder of the lease.', (o) => str(path(o, 'spec.holderIdentity')))],
});
// kubectl shows NAME HOLDER AGE; the builder already orders it that way.
