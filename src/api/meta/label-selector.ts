/**
 * Label selectors: the string form used in `?labelSelector=` and `kubectl -l`, and the
 * structured metav1.LabelSelector (matchLabels + matchExpressions) used inside objects.
 *
 * Grammar (as Kubernetes parses it): requirements separated by ',' (AND), each one of
 *   key | !key | key=value | key==value | key!=value | key in (v1,v2) | key notin (v1,v2)
 *   | key>N | key<N
 * Whitespace separates tokens; `in`/`notin` are keywords only in operator position.
 * Keys and values are validated like Kubernetes does and a bad selector is a 400 BadRequest
 * whose message follows Kubernetes' wording ("unable to parse requirement: ...").
 */
import { errors } from './status.js';

/** Operators, spelled as Kubernetes' selection package spells them. */
export type LabelOperator = 'in' | 'notin' | '=' | '==' | '!=' | 'exists' | '!' | 'gt' | 'lt';

export interface LabelRequirement {
  readonly key: string;
  readonly operator: LabelOperator;
  /** Sorted and de-duplicated for the string form; one value for =, ==, !=, gt, lt; none for exists/!. */
  readonly values: readonly string[];
}

export type Labels = Readonly<Record<string, string>> | undefined | null;

export interface LabelSelector {
  /** AND of these, sorted by key. Empty means "everything" unless `nothing` is set. */
  readonly requirements: readonly LabelRequirement[];
  /** True for the selector of a nil metav1.LabelSelector: it matches no object at all. */
  readonly nothing: boolean;
  matches(labels: Labels): boolean;
  /** The canonical string form (Kubernetes' Selector.String()). */
  toString(): string;
}

// ---------------------------------------------------------------- validation

const LABEL_KEY_NAME_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const LABEL_KEY_NAME_RE = new RegExp(`^${LABEL_KEY_NAME_FMT}$`);
const LABEL_VALUE_FMT = `(${LABEL_KEY_NAME_FMT})?`;
const LABEL_VALUE_RE = new RegExp(`^${LABEL_VALUE_FMT}$`);
const DNS1123_LABEL_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1123_SUBDOMAIN_RE = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);

function regexError(msg: string, re: string, ...examples: string[]): string {
  return `${msg} (e.g. ${examples.map((e) => `'${e}', `).join('or ')}regex used for validation is '${re}')`;
}

const byteLength = (s: string): number => Buffer.byteLength(s, 'utf8');

/** Problems with a label key (empty when valid): optional DNS-subdomain prefix + '/' + name. */
export function labelKeyErrors(key: string): string[] {
  const errs: string[] = [];
  const parts = key.split('/');
  let name: string;
  if (parts.length === 1) {
    name = parts[0]!;
  } else if (parts.length === 2) {
    const prefix = parts[0]!;
    name = parts[1]!;
    if (prefix.length === 0) {
      errs.push('prefix part must be non-empty');
    } else {
      if (byteLength(prefix) > 253) errs.push('prefix part must be no more than 253 bytes');
      if (!DNS1123_SUBDOMAIN_RE.test(prefix)) {
        errs.push('prefix part ' + regexError("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character", DNS1123_SUBDOMAIN_FMT, 'example.com'));
      }
    }
  } else {
    return ['a valid label key ' + regexError("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", LABEL_KEY_NAME_FMT, 'MyName', 'my.name', '123-abc') +
      " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (byteLength(name) > 63) errs.push('name part must be no more than 63 bytes');
  if (!LABEL_KEY_NAME_RE.test(name)) {
    errs.push('name part ' + regexError("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", LABEL_KEY_NAME_FMT, 'MyName', 'my.name', '123-abc'));
  }
  return errs;
}

/** Problems with a label value (empty when valid). The empty string is a valid value. */
export function labelValueErrors(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > 63) errs.push('must be no more than 63 bytes');
  if (!LABEL_VALUE_RE.test(value)) {
    errs.push(regexError("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", LABEL_VALUE_FMT, 'MyValue', 'my_value', '12345'));
  }
  return errs;
}

/** Go's field.Invalid(...).Error() shape: `<path>: Invalid value: "<v>": <detail>`. */
function invalid(path: string, value: unknown, detail: string): string {
  const shown = typeof value === 'string' ? JSON.stringify(value) : Array.isArray(value) ? `[]string{${value.map((v) => JSON.stringify(v)).join(', ')}}` : String(value);
  return `${path}: Invalid value: ${shown}: ${detail}`;
}

function aggregate(msgs: string[]): string {
  return msgs.length === 1 ? msgs[0]! : `[${msgs.join(', ')}]`;
}

const INT64_RE = /^[+-]?\d+$/;
function isInt64(s: string): boolean {
  if (!INT64_RE.test(s)) return false;
  const n = BigInt(s);
  return n >= -(2n ** 63n) && n <= 2n ** 63n - 1n;
}

/**
 * Builds a validated requirement (Kubernetes' labels.NewRequirement). Values are sorted and
 * de-duplicated. Returns the error text instead of throwing so callers can add their prefix.
 * `keyPath` is the field path used in the key's error text ('key' here, '<nil>' in the parser).
 */
function newRequirement(key: string, op: LabelOperator, vals: readonly string[], keyPath = 'key'): LabelRequirement | string {
  const errs: string[] = [];
  const kerr = labelKeyErrors(key);
  if (kerr.length) errs.push(invalid(keyPath, key, kerr.join('; ')));
  switch (op) {
    case 'in': case 'notin':
      if (vals.length === 0) errs.push(invalid('values', vals, "for 'in', 'notin' operators, values set can't be empty"));
      break;
    case '=': case '==': case '!=':
      if (vals.length !== 1) errs.push(invalid('values', vals, 'exact-match compatibility requires one single value'));
      break;
    case 'exists': case '!':
      if (vals.length !== 0) errs.push(invalid('values', vals, 'values set must be empty for exists and does not exist'));
      break;
    case 'gt': case 'lt':
      if (vals.length !== 1) errs.push(invalid('values', vals, "for 'Gt', 'Lt' operators, exactly one value is required"));
      vals.forEach((v, i) => {
        if (!isInt64(v)) errs.push(invalid(`values[${i}]`, v, "for 'Gt', 'Lt' operators, the value must be an integer"));
      });
      break;
    default:
      errs.push(`operator: Unsupported value: ${JSON.stringify(op)}: supported values: "in", "notin", "=", "==", "!=", "gt", "lt", "exists", "!"`);
  }
  vals.forEach((v, i) => {
    const verr = labelValueErrors(v);
    if (verr.length) errs.push(invalid(`values[${i}][${key}]`, v, verr.join('; ')));
  });
  if (errs.length) return aggregate(errs);
  return { key, operator: op, values: [...new Set(vals)].sort() };
}

// ---------------------------------------------------------------- matching and printing

function requirementMatches(r: LabelRequirement, labels: Labels): boolean {
  const has = labels != null && Object.prototype.hasOwnProperty.call(labels, r.key);
  const val = has ? labels![r.key]! : undefined;
  switch (r.operator) {
    case 'in': case '=': case '==':
      return has && r.values.includes(val!);
    case 'notin': case '!=':
      return !has || !r.values.includes(val!);
    case 'exists':
      return has;
    case '!':
      return !has;
    case 'gt': case 'lt': {
      if (!has || !isInt64(val!) || r.values.length !== 1) return false;
      const lv = BigInt(val!), rv = BigInt(r.values[0]!);
      return r.operator === 'gt' ? lv > rv : lv < rv;
    }
  }
}

export function requirementToString(r: LabelRequirement): string {
  const vals = r.values.join(',');
  switch (r.operator) {
    case 'exists': return r.key;
    case '!': return '!' + r.key;
    case 'in': return `${r.key} in (${vals})`;
    case 'notin': return `${r.key} notin (${vals})`;
    case 'gt': return `${r.key}>${vals}`;
    case 'lt': return `${r.key}<${vals}`;
    default: return `${r.key}${r.operator}${vals}`;
  }
}

function makeSelector(reqs: LabelRequirement[], nothing = false): LabelSelector {
  // Stable sort by key keeps equal keys in their written order, like a deterministic parse.
  const requirements = Object.freeze([...reqs].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)));
  return {
    requirements,
    nothing,
    matches(labels: Labels): boolean {
      if (nothing) return false;
      for (const r of requirements) if (!requirementMatches(r, labels)) return false;
      return true;
    },
    toString(): string {
      return nothing ? '' : requirements.map(requirementToString).join(',');
    },
  };
}

/** The selector that matches every object. */
export const everything: LabelSelector = makeSelector([]);
/** The selector that matches no object (a nil metav1.LabelSelector). */
export const nothing: LabelSelector = makeSelector([], true);

export function selectsEverything(sel: LabelSelector): boolean {
  return !sel.nothing && sel.requirements.length === 0;
}

export function selectsNothing(sel: LabelSelector): boolean {
  return sel.nothing;
}

/**
 * If the selector requires `key` to have one specific value (=, == or a one-value in), that
 * value (Kubernetes' RequiresExactMatch).
 */
export function requiresExactMatch(sel: LabelSelector, key: string): string | undefined {
  for (const r of sel.requirements) {
    if (r.key !== key) continue;
    if ((r.operator === '=' || r.operator === '==' || r.operator === 'in') && r.values.length === 1) return r.values[0];
    return undefined;
  }
  return undefined;
}

// ---------------------------------------------------------------- the string form

type Tok = 'id' | 'end' | '(' | ')' | ',' | '!' | '==' | '=' | '!=' | '>' | '<' | 'in' | 'notin';
interface Item { tok: Tok; lit: string }

const SPECIAL = new Set(['=', '!', '(', ')', ',', '>', '<']);
const SYMBOL_TOKENS: Record<string, Tok> = { '(': '(', ')': ')', ',': ',', '!': '!', '==': '==', '=': '=', '!=': '!=', '>': '>', '<': '<' };
const isSpace = (c: string): boolean => c === ' ' || c === '\t' || c === '\r' || c === '\n';

function lex(s: string): Item[] {
  const items: Item[] = [];
  let pos = 0;
  for (;;) {
    while (pos < s.length && isSpace(s[pos]!)) pos++;
    if (pos >= s.length) { items.push({ tok: 'end', lit: '' }); return items; }
    if (SPECIAL.has(s[pos]!)) {
      // Longest run of special characters that still spells a token ("!=", "==").
      let buf = '', last: Item | undefined;
      while (pos < s.length && SPECIAL.has(s[pos]!)) {
        const next = buf + s[pos]!;
        const t = SYMBOL_TOKENS[next];
        if (t) { buf = next; last = { tok: t, lit: next }; pos++; } else if (last) break; else { buf = next; pos++; }
      }
      items.push(last ?? { tok: 'id', lit: buf });
      continue;
    }
    let buf = '';
    while (pos < s.length && !SPECIAL.has(s[pos]!) && !isSpace(s[pos]!)) buf += s[pos++]!;
    items.push({ tok: buf === 'in' ? 'in' : buf === 'notin' ? 'notin' : 'id', lit: buf });
  }
}

class Parser {
  private pos = 0;
  constructor(private readonly items: Item[]) {}

  /** In value context the keywords are plain identifiers. */
  private peek(values: boolean): Item {
    const it = this.items[this.pos]!;
    return values && (it.tok === 'in' || it.tok === 'notin') ? { tok: 'id', lit: it.lit } : it;
  }
  private next(values: boolean): Item {
    const it = this.peek(values);
    this.pos++;
    return it;
  }

  parse(): LabelRequirement[] {
    const reqs: LabelRequirement[] = [];
    for (;;) {
      const { tok, lit } = this.peek(true);
      if (tok === 'end') return reqs;
      if (tok !== 'id' && tok !== '!') throw new Error(`found '${lit}', expected: !, identifier, or 'end of string'`);
      const r = this.requirement();
      reqs.push(r);
      const after = this.next(true);
      if (after.tok === 'end') return reqs;
      if (after.tok !== ',') throw new Error(`found '${after.lit}', expected: ',' or 'end of string'`);
      const follow = this.peek(true);
      if (follow.tok !== 'id' && follow.tok !== '!') throw new Error(`found '${follow.lit}', expected: identifier after ','`);
    }
  }

  private requirement(): LabelRequirement {
    const fail = (m: string): never => { throw new Error(`unable to parse requirement: ${m}`); };
    let op: LabelOperator | undefined;
    let it = this.next(true);
    if (it.tok === '!') { op = '!'; it = this.next(true); }
    if (it.tok !== 'id') fail(`found '${it.lit}', expected: identifier`);
    const key = it.lit;
    const kerr = labelKeyErrors(key);
    if (kerr.length) fail(invalid('<nil>', key, kerr.join('; ')));
    const la = this.peek(true).tok;
    if (op === '!' || la === 'end' || la === ',') {
      const r = newRequirement(key, op ?? 'exists', [], '<nil>');
      return typeof r === 'string' ? fail(r) : r;
    }
    const opItem = this.next(false);
    const ops: Partial<Record<Tok, LabelOperator>> = { in: 'in', notin: 'notin', '=': '=', '==': '==', '!=': '!=', '>': 'gt', '<': 'lt' };
    const binary = ops[opItem.tok];
    if (!binary) return fail(`found '${opItem.lit}', expected: in, notin, =, ==, !=, gt, lt`);
    const values = binary === 'in' || binary === 'notin' ? this.setValues(fail) : this.exactValue(fail);
    const r = newRequirement(key, binary, values, '<nil>');
    return typeof r === 'string' ? fail(r) : r;
  }

  private setValues(fail: (m: string) => never): string[] {
    const open = this.next(true);
    if (open.tok !== '(') fail(`found '${open.lit}' expected: '('`);
    const first = this.peek(true);
    if (first.tok === ')') { this.pos++; return ['']; }
    if (first.tok !== 'id' && first.tok !== ',') fail(`found '${first.lit}', expected: ',', ')' or identifier`);
    const vals = new Set<string>();
    for (;;) {
      const it = this.next(true);
      if (it.tok === 'id') {
        vals.add(it.lit);
        const la = this.peek(true);
        if (la.tok === ',') continue;
        if (la.tok === ')') break;
        fail(`found '${la.lit}', expected: ',' or ')'`);
      } else if (it.tok === ',') {
        // "(,a)", "(a,,b)" and "(a,)" all contribute the empty value.
        if (vals.size === 0) vals.add('');
        const la = this.peek(true);
        if (la.tok === ')') { vals.add(''); break; }
        if (la.tok === ',') vals.add('');
      } else {
        fail(`found '${it.lit}', expected: ',', or identifier`);
      }
    }
    const close = this.next(true);
    if (close.tok !== ')') fail(`found '${first.lit}', expected: ')'`);
    return [...vals];
  }

  private exactValue(fail: (m: string) => never): string[] {
    const la = this.peek(true);
    if (la.tok === 'end' || la.tok === ',') return [''];
    const it = this.next(true);
    if (it.tok === 'id') return [it.lit];
    return fail(`found '${it.lit}', expected: identifier`);
  }
}

/**
 * Parses the string form. The empty string selects everything. Throws a 400 ApiError on a
 * malformed or invalid selector.
 */
export function parseLabelSelector(selector: string): LabelSelector {
  let reqs: LabelRequirement[];
  try {
    reqs = new Parser(lex(selector)).parse();
  } catch (e) {
    throw errors.badRequest((e as Error).message);
  }
  return makeSelector(reqs);
}

/** Parses the string form into a matcher function (a 400 ApiError when invalid). */
export function labelSelectorMatcher(selector: string): (labels: Labels) => boolean {
  const sel = parseLabelSelector(selector);
  return (labels) => sel.matches(labels);
}

// ---------------------------------------------------------------- metav1.LabelSelector

export interface LabelSelectorRequirementObject {
  key: string;
  operator: string;
  values?: string[] | null;
}

export interface LabelSelectorObject {
  matchLabels?: Record<string, string> | null;
  matchExpressions?: LabelSelectorRequirementObject[] | null;
}

const EXPRESSION_OPS: Record<string, LabelOperator> = { In: 'in', NotIn: 'notin', Exists: 'exists', DoesNotExist: '!' };

/**
 * Converts a metav1.LabelSelector (Kubernetes' LabelSelectorAsSelector): null/undefined selects
 * nothing, an empty selector selects everything. Throws a 400 ApiError when invalid.
 */
export function labelSelectorFromObject(sel: LabelSelectorObject | null | undefined): LabelSelector {
  if (sel == null) return nothing;
  if (typeof sel !== 'object' || Array.isArray(sel)) throw errors.badRequest('a label selector must be an object');
  const reqs: LabelRequirement[] = [];
  const fail = (m: string): never => { throw errors.badRequest(m); };
  const ml = sel.matchLabels ?? {};
  if (typeof ml !== 'object' || Array.isArray(ml)) fail('matchLabels must be a map of strings');
  for (const [k, v] of Object.entries(ml)) {
    if (typeof v !== 'string') fail(`matchLabels[${k}] must be a string`);
    const r = newRequirement(k, '=', [v]);
    reqs.push(typeof r === 'string' ? fail(r) : r);
  }
  const exprs = sel.matchExpressions ?? [];
  if (!Array.isArray(exprs)) fail('matchExpressions must be a list');
  for (const e of exprs) {
    if (typeof e !== 'object' || e === null) fail('each matchExpressions entry must be an object');
    const op = EXPRESSION_OPS[e.operator];
    if (!op) fail(`${JSON.stringify(e.operator)} is not a valid label selector operator`);
    const vals = e.values ?? [];
    if (!Array.isArray(vals) || vals.some((v) => typeof v !== 'string')) fail('matchExpressions values must be a list of strings');
    const r = newRequirement(typeof e.key === 'string' ? e.key : '', op!, vals);
    reqs.push(typeof r === 'string' ? fail(r) : r);
  }
  return makeSelector(reqs);
}

/** A matcher for a metav1.LabelSelector (a nil selector matches nothing). */
export function labelSelectorObjectMatcher(sel: LabelSelectorObject | null | undefined): (labels: Labels) => boolean {
  const s = labelSelectorFromObject(sel);
  return (labels) => s.matches(labels);
}

/**
 * The string form of a metav1.LabelSelector, as Scale's status.selector and kubectl show it
 * (e.g. "app=web,tier in (a,b)"). A nil selector gives "".
 */
export function labelSelectorAsString(sel: LabelSelectorObject | null | undefined): string {
  return labelSelectorFromObject(sel).toString();
}

/** A selector matching exactly the given labels (Kubernetes' SelectorFromSet; not validated). */
export function selectorFromSet(set: Readonly<Record<string, string>> | undefined | null): LabelSelector {
  return makeSelector(Object.entries(set ?? {}).map(([key, v]) => ({ key, operator: '=' as const, values: [v] })));
}
