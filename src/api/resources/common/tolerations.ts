/**
 * Toleration checks for pods and RuntimeClass scheduling, with Kubernetes' rules and wording
 * (core validation's ValidateTolerations): a key is a qualified name; an empty key needs
 * operator Exists; tolerationSeconds needs effect NoExecute; Equal (or no operator) needs a
 * label-value value, Exists no value; the effect, when given, is one of the three taint effects.
 */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { isObject, labelValue, pushAll, qualifiedName } from './validation.js';

const OPERATORS = ['Equal', 'Exists'];
const EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

export function validateTolerations(tolerations: unknown, field: string, errs: FieldError[]): void {
  if (tolerations === undefined || tolerations === null) return;
  if (!Array.isArray(tolerations)) { errs.push(fieldErrors.typeInvalid(field, tolerations, 'must be a list')); return; }
  tolerations.forEach((t: unknown, i: number) => {
    const f = `${field}[${i}]`;
    if (!isObject(t)) { errs.push(fieldErrors.typeInvalid(f, t, 'must be an object')); return; }
    const key = typeof t.key === 'string' ? t.key : '';
    const operator = typeof t.operator === 'string' ? t.operator : '';
    const value = typeof t.value === 'string' ? t.value : '';
    const effect = typeof t.effect === 'string' ? t.effect : '';
    if (key !== '') pushAll(errs, `${f}.key`, key, qualifiedName(key));
    if (key === '' && operator !== 'Exists') {
      errs.push(fieldErrors.invalid(`${f}.operator`, operator, 'operator must be Exists when `key` is empty, which means "match all values and all keys"'));
    }
    if (t.tolerationSeconds !== undefined && t.tolerationSeconds !== null && effect !== 'NoExecute') {
      errs.push(fieldErrors.invalid(`${f}.effect`, effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"));
    }
    if (operator === '' || operator === 'Equal') {
      // Kubernetes reports a bad value under `operator`, its several problems joined by ';'.
      const problems = labelValue(value);
      if (problems.length) errs.push(fieldErrors.invalid(`${f}.operator`, value, problems.join(';')));
    } else if (operator === 'Exists') {
      if (value !== '') errs.push(fieldErrors.invalid(`${f}.operator`, value, "value must be empty when `operator` is 'Exists'"));
    } else {
      errs.push(fieldErrors.notSupported(`${f}.operator`, operator, OPERATORS));
    }
    if (effect !== '' && !EFFECTS.includes(effect)) errs.push(fieldErrors.notSupported(`${f}.effect`, effect, EFFECTS));
  });
}
