/** core/v1 ConfigMap: key validation, 1 MiB total size, immutable: true freezes data. */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { col, rec } from '../common/table-util.js';
import { configMapKey, deepEqual, isObject, pushAll } from '../common/validation.js';
import type { KubeObject } from '../types.js';

/** The ConfigMap with the cluster CA in every namespace (root-ca-cert-publisher writes it; pods' token volumes read it). */
export const ROOT_CA_CONFIG_MAP = 'kube-root-ca.crt';

export const MAX_DATA_BYTES = 1024 * 1024;

export function validateImmutableData(obj: KubeObject, old: KubeObject | undefined, fields: string[], errs: FieldError[]): void {
  if (!old) return;
  if (old.immutable === true) {
    if (obj.immutable !== true) errs.push(fieldErrors.forbidden('immutable', 'field is immutable when `immutable` is set'));
    for (const f of fields) if (!deepEqual(obj[f] ?? {}, old[f] ?? {})) errs.push(fieldErrors.forbidden(f, 'field is immutable when `immutable` is set'));
  }
}

export const configmaps = defineResource({
  group: '', versions: ['v1'], kind: 'ConfigMap', plural: 'configmaps', namespaced: true,
  shortNames: ['cm'],
  validateSpec(obj, old) {
    const errs: FieldError[] = [];
    let size = 0;
    const keys = new Set<string>();
    for (const field of ['data', 'binaryData']) {
      const d = obj[field];
      if (d === undefined || d === null) continue;
      if (!isObject(d)) { errs.push(fieldErrors.typeInvalid(field, d, 'must be a map of strings')); continue; }
      for (const k in d) {
        if (!Object.prototype.hasOwnProperty.call(d, k)) continue;
        const v = d[k];
        const problems = configMapKey(k);
        if (problems.length) pushAll(errs, `${field}[${k}]`, k, problems);
        if (typeof v !== 'string') errs.push(fieldErrors.typeInvalid(`${field}[${k}]`, v, 'must be a string'));
        else size += v.length;
        if (keys.has(k)) errs.push(fieldErrors.invalid(`${field}[${k}]`, k, 'duplicate of key present in ' + (field === 'data' ? 'binaryData' : 'data')));
        keys.add(k);
      }
    }
    if (size > MAX_DATA_BYTES) errs.push(fieldErrors.tooLong('', MAX_DATA_BYTES));
    validateImmutableData(obj, old, ['data', 'binaryData'], errs);
    return errs;
  },
  columns: [col('Data', 'integer', 'Number of data entries', (o) => Object.keys(rec(o.data)).length + Object.keys(rec(o.binaryData)).length)],
});
