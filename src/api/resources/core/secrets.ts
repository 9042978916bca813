/** core/v1 Secret: type Opaque by default, stringData folded into data on write, typed key checks. */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { col, rec, str } from '../common/table-util.js';
import { configMapKey, isObject, pushAll } from '../common/validation.js';
import { MAX_DATA_BYTES, validateImmutableData } from './configmaps.js';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export const secrets = defineResource({
  group: '', versions: ['v1'], kind: 'Secret', plural: 'secrets', namespaced: true,
  defaults(obj) {
    obj.type ??= 'Opaque';
    if (isObject(obj.stringData)) {
      const data = isObject(obj.data) ? obj.data : {};
      for (const [k, v] of Object.entries(obj.stringData)) data[k] = Buffer.from(String(v), 'utf8').toString('base64');
      obj.data = data;
    }
    delete obj.stringData;
  },
  validateSpec(obj, old) {
    const errs: FieldError[] = [];
    const data = obj.data;
    let size = 0;
    if (data !== undefined && data !== null) {
      if (!isObject(data)) errs.push(fieldErrors.typeInvalid('data', data, 'must be a map of base64 strings'));
      else for (const [k, v] of Object.entries(data)) {
        pushAll(errs, `data[${k}]`, k, configMapKey(k));
        if (typeof v !== 'string' || !BASE64.test(v) || v.length % 4 !== 0) errs.push(fieldErrors.typeInvalid(`data[${k}]`, '<secret contents redacted>', 'must be a base64-encoded string'));
        else size += Math.floor(v.length * 3 / 4);
      }
    }
    if (size > MAX_DATA_BYTES) errs.push(fieldErrors.tooLong('data', MAX_DATA_BYTES));
    const d = rec(data), type = str(obj.type);
    const need = (key: string): void => { if (d[key] === undefined) errs.push(fieldErrors.required(`data[${key}]`)); };
    switch (type) {
      case 'kubernetes.io/service-account-token':
        if (!obj.metadata?.annotations?.['kubernetes.io/service-account.name']) errs.push(fieldErrors.required('metadata.annotations[kubernetes.io/service-account.name]'));
        break;
      case 'kubernetes.io/dockercfg': need('.dockercfg'); break;
      case 'kubernetes.io/dockerconfigjson': need('.dockerconfigjson'); break;
      case 'kubernetes.io/basic-auth':
        if (d.username === undefined && d.password === undefined) errs.push(fieldErrors.required('data[username]'));
        break;
      case 'kubernetes.io/ssh-auth': need('ssh-privatekey'); break;
      case 'kubernetes.io/tls': need('tls.crt'); need('tls.key'); break;
    }
    if (old && str(old.type) !== type) errs.push(fieldErrors.invalid('type', type, 'field is immutable'));
    validateImmutableData(obj, old, ['data'], errs);
    return errs;
  },
  fieldSelectors: { type: (o) => str(o.type) },
  columns: [
    col('Type', 'string', 'The type of the secret', (o) => str(o.type)),
    col('Data', 'string', 'The number of entries in the secret', (o) => String(Object.keys(rec(o.data)).length)),
  ],
});
