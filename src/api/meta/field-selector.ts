/**
 * Field selectors (`?fieldSelector=`): comma-separated terms `field=value`, `field==value` or
 * `field!=value`, all of which must hold. In values, `\,`, `\=` and `\\` escape the special
 * characters; the field name is taken up to the first operator. Which fields a resource
 * supports is the resource's business: callers check `requirements` against their list and
 * throw `unsupportedFieldError(field)` for the rest.
 */
import { ApiError, errors } from './status.js';

export type FieldOperator = '=' | '==' | '!=';

export interface FieldRequirement {
  readonly field: string;
  readonly operator: FieldOperator;
  /** Unescaped value. */
  readonly value: string;
}

export interface FieldSelector {
  /** AND of these, sorted by their written form (as Kubernetes sorts terms). Empty = everything. */
  readonly requirements: readonly FieldRequirement[];
  toString(): string;
}

/** Splits on commas that are not escaped by a backslash; escapes stay in the terms. */
function splitTerms(s: string): string[] {
  if (s.length === 0) return [];
  const terms: string[] = [];
  let start = 0, inSlash = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (inSlash) inSlash = false;
    else if (c === '\\') inSlash = true;
    else if (c === ',') { terms.push(s.slice(start, i)); start = i + 1; }
  }
  terms.push(s.slice(start));
  return terms;
}

const OPERATORS: readonly FieldOperator[] = ['!=', '==', '='];

function splitTerm(term: string): { field: string; op: FieldOperator; rhs: string } | undefined {
  for (let i = 0; i < term.length; i++) {
    for (const op of OPERATORS) {
      if (term.startsWith(op, i)) return { field: term.slice(0, i), op, rhs: term.slice(i + op.length) };
    }
  }
  return undefined;
}

function unescapeValue(s: string): string {
  let out = '', inSlash = false;
  for (const c of s) {
    if (inSlash) {
      if (c !== '\\' && c !== ',' && c !== '=') {
        throw errors.badRequest(`invalid field selector: invalid escape sequence: \\${c}`);
      }
      out += c;
      inSlash = false;
      continue;
    }
    if (c === '\\') inSlash = true;
    else if (c === ',' || c === '=') throw errors.badRequest(`invalid field selector: unescaped character in value: ${c}`);
    else out += c;
  }
  if (inSlash) throw errors.badRequest('invalid field selector: invalid escape sequence: \\');
  return out;
}

/** Escapes a value for the string form (the inverse of parsing). */
export function escapeFieldValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/,/g, '\\,').replace(/=/g, '\\=');
}

function makeSelector(reqs: FieldRequirement[]): FieldSelector {
  const requirements = Object.freeze(reqs);
  return {
    requirements,
    toString: () => requirements.map((r) => `${r.field}${r.operator === '!=' ? '!=' : '='}${escapeFieldValue(r.value)}`).join(','),
  };
}

export const everythingFields: FieldSelector = makeSelector([]);

/** Parses the string form; the empty string selects everything. A malformed term is a 400. */
export function parseFieldSelector(selector: string): FieldSelector {
  const parts = splitTerms(selector).sort();
  const reqs: FieldRequirement[] = [];
  for (const part of parts) {
    if (part === '') continue;
    const t = splitTerm(part);
    if (!t) throw errors.badRequest(`invalid selector: '${selector}'; can't understand '${part}'`);
    reqs.push({ field: t.field, operator: t.op, value: unescapeValue(t.rhs) });
  }
  return makeSelector(reqs);
}

export function fieldSelectsEverything(sel: FieldSelector): boolean {
  return sel.requirements.length === 0;
}

/**
 * A matcher over an object's selectable fields. `getField` returns the field's string value
 * (undefined counts as the empty string, as in Kubernetes' fields.Set).
 */
export function fieldSelectorMatcher(sel: FieldSelector, getField: (path: string) => string | undefined): boolean;
export function fieldSelectorMatcher(sel: FieldSelector): (getField: (path: string) => string | undefined) => boolean;
export function fieldSelectorMatcher(sel: FieldSelector, getField?: (path: string) => string | undefined):
  boolean | ((getField: (path: string) => string | undefined) => boolean) {
  const test = (get: (path: string) => string | undefined): boolean => {
    for (const r of sel.requirements) {
      const v = get(r.field) ?? '';
      if (r.operator === '!=' ? v === r.value : v !== r.value) return false;
    }
    return true;
  };
  return getField ? test(getField) : test;
}

/** The value a selector requires for `field` (=, ==), if any (Kubernetes' RequiresExactMatch). */
export function requiresExactField(sel: FieldSelector, field: string): string | undefined {
  for (const r of sel.requirements) if (r.field === field && r.operator !== '!=') return r.value;
  return undefined;
}

/** The single object name a selector pins (`metadata.name=x`), for watch and list shortcuts. */
export function exactName(sel: FieldSelector): string | undefined {
  return requiresExactField(sel, 'metadata.name');
}

/** The namespace a selector pins (`metadata.namespace=x`), if any. */
export function exactNamespace(sel: FieldSelector): string | undefined {
  return requiresExactField(sel, 'metadata.namespace');
}

/** The 400 Kubernetes returns for a field a resource does not support in selectors. */
export function unsupportedFieldError(field: string): ApiError {
  return errors.badRequest(`field label not supported: ${field}`);
}

/** Throws `unsupportedFieldError` for the first requirement whose field is not supported. */
export function checkFieldSelector(sel: FieldSelector, supported: ReadonlySet<string> | readonly string[] | ((field: string) => boolean)): void {
  const ok = typeof supported === 'function' ? supported
    : Array.isArray(supported) ? (f: string) => (supported as readonly string[]).includes(f)
      : (f: string) => (supported as ReadonlySet<string>).has(f);
  for (const r of sel.requirements) if (!ok(r.field)) throw unsupportedFieldError(r.field);
}
