/**
 * The Go-style command-line parser, driven by a daemon's option table.
 *
 * Accepted forms (as pflag): `--name=value`, `--name value`, `-v=2`, `-v 2`, `-v2`, `-h`;
 * booleans as `--x` or `--x=false` (a bare `--x` never consumes the next argument); `--` ends
 * the options. "_" and "-" are interchangeable in names. Daemons take no positional arguments.
 *
 * Result: one config object with every option filled (explicit value, else the table default,
 * else the type's zero value), feature gates fully resolved, enumerations, value syntax and
 * cross-option rules checked. Any problem throws a FlagError naming the option.
 */
import { FlagError } from './flag-error.js';
import { camelCase, normalizeName, type OptionSpec } from './option-spec.js';
import { resolveFeatureGates, type FeatureGateSpec } from './feature-gates.js';
import { valueType } from './value-types.js';
import { SYNTAX_CHECKS } from './syntax-checks.js';

export interface RuleContext {
  /** Table names of the options given on the command line. */
  readonly explicit: ReadonlySet<string>;
}

/** A rule that looks at several options together; returns a one-line message when broken. */
export interface CrossRule<C> {
  /** The option the message names. */
  readonly option: string;
  readonly check: (config: C, ctx: RuleContext) => string | undefined;
}

export interface DaemonFlagSet<C> {
  readonly daemon: string;
  /** One-line summary for --help. */
  readonly summary: string;
  readonly options: readonly OptionSpec[];
  readonly gates: readonly FeatureGateSpec[];
  readonly rules: readonly CrossRule<C>[];
  /** Order of --help sections. */
  readonly groups: readonly string[];
  /**
   * Options the daemon parses and checks but does not act on yet, with why: set explicitly, each
   * prints a warning, so a user never mistakes an accepted option for a working one.
   */
  readonly notActedOn?: Readonly<Record<string, string>>;
}

export interface ParseResult<C> {
  readonly config: C;
  readonly explicit: ReadonlySet<string>;
  /** Deprecation warnings, one line each, for stderr. */
  readonly warnings: readonly string[];
}

function optionLabel(o: OptionSpec): string {
  return `--${o.name}`;
}

function parseValue(o: OptionSpec, text: string): unknown {
  let input = text;
  if (o.bareKeys) {
    input = text.split(',').map((p) => (p.trim() !== '' && !p.includes('=') ? `${p}=true` : p)).join(',');
  }
  try {
    return valueType(o.type).parse(input);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new FlagError(`invalid value "${text}" for ${optionLabel(o)}: ${reason}`, o.name);
  }
}

function indexOptions(options: readonly OptionSpec[]): { long: Map<string, OptionSpec>; short: Map<string, OptionSpec> } {
  const long = new Map<string, OptionSpec>();
  const short = new Map<string, OptionSpec>();
  for (const o of options) {
    long.set(normalizeName(o.name), o);
    if (o.short) short.set(o.short, o);
  }
  return { long, short };
}

/** Edit distance, for "did you mean" hints. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_v, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min((prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length] ?? 0;
}

function suggestion(options: readonly OptionSpec[], shown: string): string {
  const wanted = normalizeName(shown.replace(/^-+/, ''));
  if (wanted.length < 3) return '';
  let best: OptionSpec | undefined;
  let bestScore = Infinity;
  for (const o of options) {
    const d = distance(wanted, normalizeName(o.name));
    if (d < bestScore) { best = o; bestScore = d; }
  }
  return best && bestScore <= Math.max(1, Math.floor(wanted.length / 5)) ? ` (did you mean --${best.name}?)` : '';
}

/** Splits argv into explicit occurrences: option -> raw texts in order. */
function scan(options: readonly OptionSpec[], argv: readonly string[]): Map<OptionSpec, string[]> {
  const { long, short } = indexOptions(options);
  const seen = new Map<OptionSpec, string[]>();
  const add = (o: OptionSpec, text: string): void => {
    const list = seen.get(o) ?? [];
    list.push(text);
    seen.set(o, list);
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--') {
      if (i + 1 < argv.length) throw new FlagError(`unexpected argument "${argv[i + 1] ?? ''}" (this command takes options only)`);
      break;
    }
    let o: OptionSpec | undefined;
    let inline: string | undefined;
    let shown: string;
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
      inline = eq < 0 ? undefined : arg.slice(eq + 1);
      shown = `--${name}`;
      o = long.get(normalizeName(name));
    } else if (arg.startsWith('-') && arg.length > 1) {
      const letter = arg[1] ?? '';
      const rest = arg.slice(2);
      inline = rest === '' ? undefined : rest.startsWith('=') ? rest.slice(1) : rest;
      shown = `-${letter}`;
      o = short.get(letter);
      if (o && inline !== undefined && !rest.startsWith('=') && valueType(o.type).impliedText !== undefined) {
        throw new FlagError(`unknown option ${arg}`);
      }
    } else {
      throw new FlagError(`unexpected argument "${arg}" (this command takes options only)`);
    }
    if (!o && !arg.startsWith('--') && arg.length > 2 && long.has(normalizeName(arg.slice(1).split('=')[0] ?? ''))) {
      throw new FlagError(`unknown option ${arg} (long options take two dashes: -${arg})`);
    }
    if (!o) throw new FlagError(`unknown option ${shown}${suggestion(options, shown)}`);
    if (inline === undefined) {
      const implied = valueType(o.type).impliedText;
      if (implied !== undefined) inline = implied;
      else {
        if (i + 1 >= argv.length) throw new FlagError(`option ${shown} needs a value`, o.name);
        inline = argv[++i] ?? '';
      }
    }
    add(o, inline);
  }
  return seen;
}

/** Parses argv (without program name) into the daemon's typed config; throws FlagError. */
export function parseDaemonArgs<C>(set: DaemonFlagSet<C>, argv: readonly string[]): ParseResult<C> {
  const occurrences = scan(set.options, argv);
  const values: Record<string, unknown> = {};
  const explicit = new Set<string>();
  const warnings: string[] = [];
  for (const o of set.options) {
    const texts = occurrences.get(o);
    const vt = valueType(o.type);
    if (!texts) {
      values[o.name] = o.default === undefined ? vt.zero() : parseValue(o, o.default);
      continue;
    }
    explicit.add(o.name);
    const inert = set.notActedOn?.[o.name];
    if (o.deprecated) warnings.push(`warning: ${optionLabel(o)} is deprecated: ${o.deprecated}${inert ? `; it is not acted on: ${inert}` : ''}`);
    else if (inert) warnings.push(`warning: ${optionLabel(o)} is accepted but not acted on yet: ${inert}`);
    let value = parseValue(o, texts[0] ?? '');
    for (const t of texts.slice(1)) {
      value = o.joinRepeats && typeof value === 'string' && value !== '' ? `${value},${t}` : vt.combine(value, parseValue(o, t));
    }
    values[o.name] = value;
  }
  for (const o of set.options) {
    if (o.replacedBy && explicit.has(o.name) && !explicit.has(o.replacedBy)) values[o.replacedBy] = values[o.name];
  }
  const stopsEarly = values['help'] === true || (values['version'] !== undefined && values['version'] !== false);
  if ('feature-gates' in values) {
    values['feature-gates'] = resolveFeatureGates(set.gates, values['feature-gates'] as Record<string, boolean>);
  }
  const config: Record<string, unknown> = {};
  for (const o of set.options) config[camelCase(o.name)] = values[o.name];
  if (!stopsEarly) {
    for (const o of set.options) checkEnumsAndSyntax(o, values[o.name]);
    const ctx: RuleContext = { explicit };
    for (const rule of set.rules) {
      const message = rule.check(config as C, ctx);
      if (message !== undefined) throw new FlagError(message, rule.option);
    }
  }
  return { config: config as C, explicit, warnings };
}

function checkEnumsAndSyntax(o: OptionSpec, value: unknown): void {
  const fail = (reason: string): never => {
    throw new FlagError(`invalid value for ${optionLabel(o)}: ${reason}`, o.name);
  };
  if (o.oneOf) {
    const items = Array.isArray(value) ? (value as string[]) : [String(value)];
    for (const item of items) {
      if (item === '' && !o.default) continue;
      if (!o.oneOf.includes(item)) fail(`"${item}" is not one of ${o.oneOf.join(', ')}`);
    }
  }
  if (o.listOf && typeof value === 'string' && value !== '') {
    for (const item of value.split(',')) {
      if (!o.listOf.includes(item.trim())) fail(`"${item}" is not one of ${o.listOf.join(', ')}`);
    }
  }
  if (o.syntax) {
    const reason = SYNTAX_CHECKS[o.syntax](value);
    if (reason !== undefined) fail(reason);
  }
}
