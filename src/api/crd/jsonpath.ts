/**
 * The JSONPath of CRD additionalPrinterColumns, evaluated like client-go's jsonpath with missing
 * keys allowed: `.a.b`, `['a.b']`, `[0]`, `[-1]`, `[1:3]`, `[*]`, `.*`, `..name` and filters
 * such as `[?(@.type=="Ready")]`. A missing key yields no result rather than an error.
 */
import { isObj } from './schema-access.js';

export type JsonPathStep =
  | { t: 'field'; name: string }
  | { t: 'wild' }
  | { t: 'recurse' }
  | { t: 'keys'; names: string[] }
  | { t: 'slice'; start?: number; end?: number; step?: number; single: boolean }
  | { t: 'filter'; left: JsonPathStep[]; op?: string; right?: { path: JsonPathStep[] } | { literal: unknown } };

const TERMINATORS = '.[]()=!<> ,';

/** Parses a path (with or without the surrounding braces); throws on bad syntax. */
export function parseJsonPath(text: string): JsonPathStep[] {
  let p = text.trim();
  if (p.startsWith('{') && p.endsWith('}')) p = p.slice(1, -1).trim();
  if (p.startsWith('$') || p.startsWith('@')) p = p.slice(1);
  const steps: JsonPathStep[] = [];
  let i = 0;
  const name = (): string => {
    let out = '';
    while (i < p.length && !TERMINATORS.includes(p[i]!)) {
      if (p[i] === '\\' && i + 1 < p.length) i++;
      out += p[i++];
    }
    return out;
  };
  while (i < p.length) {
    const c = p[i]!;
    if (c === '.') {
      i++;
      if (p[i] === '.') { i++; steps.push({ t: 'recurse' }); if (p[i] === '[') continue; }
      const n = name();
      if (n === '*') steps.push({ t: 'wild' });
      else if (n !== '') steps.push({ t: 'field', name: n });
    } else if (c === '[') {
      const end = closing(p, i);
      steps.push(bracket(p.slice(i + 1, end).trim(), text));
      i = end + 1;
    } else {
      throw new Error(`unrecognized character in action: ${JSON.stringify(c)} in ${text}`);
    }
  }
  return steps;
}

/** The index of the ']' closing the '[' at `open` (quotes and parentheses respected). */
function closing(p: string, open: number): number {
  let depth = 0;
  let quote = '';
  for (let i = open + 1; i < p.length; i++) {
    const c = p[i]!;
    if (quote) { if (c === '\\') i++; else if (c === quote) quote = ''; continue; }
    if (c === '"' || c === "'") quote = c;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ']' && depth === 0) return i;
  }
  throw new Error(`unclosed array expect ] in ${p}`);
}

const unquote = (s: string): string => s.slice(1, -1).replace(/\\(.)/g, '$1');
const isQuoted = (s: string): boolean => s.length >= 2 && (s[0] === '"' || s[0] === "'") && s.at(-1) === s[0];

function bracket(inner: string, text: string): JsonPathStep {
  if (inner === '*') return { t: 'slice', single: false };
  if (inner.startsWith('?')) return filter(inner.slice(1).trim(), text);
  if (isQuoted(inner)) return { t: 'keys', names: inner.split(/\s*,\s*/).filter(isQuoted).map(unquote) };
  const parts = inner.split(':').map((x) => x.trim());
  const num = (x: string | undefined): number | undefined => {
    if (x === undefined || x === '') return undefined;
    if (!/^-?\d+$/.test(x)) throw new Error(`invalid array index ${x} in ${text}`);
    return Number(x);
  };
  if (parts.length > 3 || parts.length === 0) throw new Error(`invalid array index ${inner} in ${text}`);
  if (parts.length === 1) return { t: 'slice', start: num(parts[0]), single: true };
  return { t: 'slice', start: num(parts[0]), end: num(parts[1]), step: num(parts[2]), single: false };
}

function filter(expr: string, text: string): JsonPathStep {
  if (!expr.startsWith('(') || !expr.endsWith(')')) throw new Error(`unrecognized filter in ${text}`);
  const body = expr.slice(1, -1).trim();
  const m = /^(.+?)\s*(==|!=|>=|<=|>|<)\s*(.+)$/.exec(body);
  if (!m) return { t: 'filter', left: parseJsonPath(body) };
  const rhs = m[3]!.trim();
  const right = rhs.startsWith('@') || rhs.startsWith('$') ? { path: parseJsonPath(rhs) } : { literal: literal(rhs, text) };
  return { t: 'filter', left: parseJsonPath(m[1]!.trim()), op: m[2]!, right };
}

function literal(s: string, text: string): unknown {
  if (isQuoted(s)) return unquote(s);
  if (s === 'true' || s === 'false') return s === 'true';
  if (s === 'null') return null;
  const n = Number(s);
  if (s !== '' && Number.isFinite(n)) return n;
  throw new Error(`unrecognized literal ${s} in ${text}`);
}

function apply(values: unknown[], step: JsonPathStep): unknown[] {
  const out: unknown[] = [];
  for (const v of values) {
    switch (step.t) {
      case 'field':
        if (isObj(v) && Object.hasOwn(v, step.name)) out.push(v[step.name]);
        break;
      case 'keys':
        if (isObj(v)) for (const k of step.names) if (Object.hasOwn(v, k)) out.push(v[k]);
        break;
      case 'wild':
        if (Array.isArray(v)) out.push(...v);
        else if (isObj(v)) for (const k of Object.keys(v).sort()) out.push(v[k]);
        break;
      case 'recurse':
        descendants(v, out);
        break;
      case 'slice':
        out.push(...slice(v, step));
        break;
      case 'filter':
        if (!Array.isArray(v)) throw new Error('filter applies to arrays only');
        out.push(...v.filter((item) => matches(item, step)));
        break;
    }
  }
  return out;
}

function descendants(v: unknown, out: unknown[]): void {
  out.push(v);
  if (Array.isArray(v)) for (const x of v) descendants(x, out);
  else if (isObj(v)) for (const k of Object.keys(v).sort()) descendants(v[k], out);
}

function slice(v: unknown, s: Extract<JsonPathStep, { t: 'slice' }>): unknown[] {
  if (!Array.isArray(v)) throw new Error('not an array or slice');
  const len = v.length;
  const norm = (i: number): number => (i < 0 ? i + len : i);
  if (s.single) {
    const i = norm(s.start ?? 0);
    return i >= 0 && i < len ? [v[i]] : [];
  }
  const start = Math.max(0, Math.min(len, norm(s.start ?? 0)));
  const end = Math.max(0, Math.min(len, norm(s.end ?? len)));
  const step = s.step && s.step > 0 ? s.step : 1;
  const out: unknown[] = [];
  for (let i = start; i < end; i += step) out.push(v[i]);
  return out;
}

function matches(item: unknown, f: Extract<JsonPathStep, { t: 'filter' }>): boolean {
  const left = evaluateSteps(item, f.left);
  if (!f.op || !f.right) return left.length > 0 && left[0] !== false && left[0] !== null;
  if (left.length === 0) return false;
  const right = 'path' in f.right ? evaluateSteps(item, f.right.path)[0] : f.right.literal;
  const a = left[0];
  switch (f.op) {
    case '==': return a === right;
    case '!=': return a !== right;
    default: {
      if (typeof a !== typeof right || (typeof a !== 'number' && typeof a !== 'string')) return false;
      const [x, y] = [a as number | string, right as number | string];
      return f.op === '<' ? x < y : f.op === '>' ? x > y : f.op === '<=' ? x <= y : x >= y;
    }
  }
}

function evaluateSteps(obj: unknown, steps: JsonPathStep[]): unknown[] {
  let values = [obj];
  for (const s of steps) values = apply(values, s);
  return values;
}

/** All values `path` selects in `obj` (empty when a key is missing); throws on a bad path. */
export function evaluateJsonPath(obj: unknown, path: string): unknown[] {
  return evaluateSteps(obj, parseJsonPath(path));
}
