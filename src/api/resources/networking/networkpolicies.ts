/** networking.k8s.io/v1 NetworkPolicy. */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { col, arr, rec, path } from '../common/table-util.js';
import { isObject, selectorString, validateLabelSelector } from '../common/validation.js';
import { defineView } from '../common/conversion.js';

export const networkpolicies = defineResource({
  group: 'networking.k8s.io', versions: ['v1'], kind: 'NetworkPolicy', plural: 'networkpolicies', namespaced: true,
  shortNames: ['netpol'], hasGeneration: true,
  defaults(obj) {
    const spec = obj.spec;
    if (!isObject(spec)) return;
    if (!Array.isArray(spec.policyTypes)) spec.policyTypes = Array.isArray(spec.egress) ? ['Ingress', 'Egress'] : ['Ingress'];
    for (const dir of ['ingress', 'egress']) for (const r of arr(spec[dir])) for (const p of arr(rec(r).ports)) if (isObject(p)) p.protocol ??= 'TCP';
  },
  validateSpec(obj) {
    const errs: FieldError[] = [];
    const spec = rec(obj.spec);
    if (!isObject(spec.podSelector)) errs.push(fieldErrors.required('spec.podSelector'));
    else validateLabelSelector(spec.podSelector, 'spec.podSelector', errs);
    arr(spec.policyTypes).forEach((t, i) => { if (!['Ingress', 'Egress'].includes(String(t))) errs.push(fieldErrors.notSupported(`spec.policyTypes[${i}]`, t, ['Ingress', 'Egress'])); });
    return errs;
  },
  columns: [col('Pod-Selector', 'string', 'Selects the pods to which this NetworkPolicy object applies.', (o) => { const s = selectorString(path(o, 'spec.podSelector')); return s === '<none>' ? '<none>' : s; })],
});

/** extensions/v1beta1 NetworkPolicy, served from networking.k8s.io/v1 storage (same fields). */
export const networkpoliciesExtensionsV1beta1 = defineView({
  group: 'extensions', version: 'v1beta1', base: networkpolicies,
  toStorage: (o) => o, fromStorage: (o) => o,
});
