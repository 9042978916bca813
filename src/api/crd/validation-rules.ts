/**
 * Static checks of x-kubernetes-validations entries when a CRD is written: rule present,
 * message and messageExpression well formed, reason known, fieldPath resolvable in the schema.
 * The CEL rules themselves are not compiled or evaluated here.
 */
import type { FieldError } from '../meta/status.js';
import { fe } from './field-errors.js';
import { additionalOf, child, index, isObj, property } from './schema-access.js';
import type { JSONSchemaProps } from './schema-types.js';

const REASONS = ['FieldValueDuplicate', 'FieldValueForbidden', 'FieldValueInvalid', 'FieldValueRequired'];
const hasNewline = (s: string): boolean => /[\n\r]/.test(s);

export function validateValidationRules(s: JSONSchemaProps, path: string): FieldError[] {
  const rules = s['x-kubernetes-validations'];
  if (!Array.isArray(rules)) return [];
  const errs: FieldError[] = [];
  rules.forEach((raw: unknown, i) => {
    const r = isObj(raw) ? raw : {};
    const at = (f: string): string => child(index(child(path, 'x-kubernetes-validations'), i), f);
    const rule = typeof r.rule === 'string' ? r.rule : '';
    const message = typeof r.message === 'string' ? r.message : '';
    const messageExpression = typeof r.messageExpression === 'string' ? r.messageExpression : '';
    const fieldPath = typeof r.fieldPath === 'string' ? r.fieldPath : '';
    if (rule.trim() === '') errs.push(fe.required(at('rule'), 'rule is not specified'));
    else if (message !== '' && message.trim() === '') errs.push(fe.invalid(at('message'), message, 'message must be non-empty if specified'));
    else if (hasNewline(message.trim())) errs.push(fe.invalid(at('message'), message, 'message must not contain line breaks'));
    else if (hasNewline(rule.trim()) && message.trim() === '') errs.push(fe.required(at('message'), 'message must be specified if rule contains line breaks'));
    if (messageExpression !== '' && messageExpression.trim() === '') {
      errs.push(fe.required(at('messageExpression'), 'messageExpression must be non-empty if specified'));
    }
    if (r.reason !== undefined && !REASONS.includes(String(r.reason))) errs.push(fe.notSupported(at('reason'), r.reason, REASONS));
    if (fieldPath !== '' && fieldPath.trim() === '') errs.push(fe.invalid(at('fieldPath'), fieldPath, 'fieldPath must be non-empty if specified'));
    if (hasNewline(fieldPath)) errs.push(fe.invalid(at('fieldPath'), fieldPath, 'fieldPath must not contain line breaks'));
    if (fieldPath !== '' && !validFieldPath(fieldPath, s)) errs.push(fe.invalid(at('fieldPath'), fieldPath, 'fieldPath must be a valid path'));
  });
  return errs;
}

/** Splits a field path into '.', '[' and ']' tokens and the text between them ('quoted' keys whole). */
function tokens(p: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < p.length) {
    const c = p[i]!;
    if (c === '.' || c === '[' || c === ']') { out.push(c); i++; continue; }
    let j = i;
    if (c === "'") {
      j++;
      while (j < p.length && !(p[j] === "'" && p[j - 1] !== '\\')) j++;
      j++;
    } else {
      while (j < p.length && !'.[]'.includes(p[j]!)) j++;
    }
    out.push(p.slice(i, j));
    i = j;
  }
  return out;
}

/** Whether `.a.b` / `['key']` steps through declared properties (or map values) of `s`. */
function validFieldPath(p: string, root: JSONSchemaProps): boolean {
  const toks = tokens(p);
  let s: JSONSchemaProps | undefined = root;
  let i = 0;
  const step = (name: string): boolean => {
    if (!s) return false;
    if (isObj(s.properties)) { s = property(s, name); return !!s; }
    const a = additionalOf(s);
    if (a === undefined) return false;
    s = typeof a === 'boolean' ? undefined : a;
    return true;
  };
  while (i < toks.length) {
    const t = toks[i++];
    if (t === '.') {
      const name = toks[i++];
      if (name === undefined || !step(name)) return false;
    } else if (t === '[') {
      const quoted = toks[i++];
      if (!quoted || quoted.length < 2 || !quoted.startsWith("'") || !quoted.endsWith("'")) return false;
      if (!step(quoted.slice(1, -1).replace(/\\(.)/g, '$1'))) return false;
      if (toks[i++] !== ']') return false;
    } else {
      return false;
    }
  }
  return true;
}
