/**
 * A small option reader for the non-daemon commands (`corectl token`, `corectl join`): long
 * options as `--name=value` or `--name value`, booleans as `--name` (or `--name=true|false`),
 * repeatable options collected in order, positional words, and everything after `--` kept as
 * it is. An unknown option or a missing value is a CommandError naming it.
 */
export class CommandError extends Error {
  override readonly name = 'CommandError';
}

export interface CommandSpec {
  /** Options taking a value; repeatable ones keep every value. */
  readonly values: readonly string[];
  readonly booleans: readonly string[];
}

export interface ParsedCommand {
  readonly positional: string[];
  readonly values: Map<string, string[]>;
  readonly booleans: Map<string, boolean>;
  /** Words after a lone `--`. */
  readonly rest: string[];
}

export function parseCommandArgs(args: readonly string[], spec: CommandSpec): ParsedCommand {
  const out: ParsedCommand = { positional: [], values: new Map(), booleans: new Map(), rest: [] };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') { out.rest.push(...args.slice(i + 1)); break; }
    if (!a.startsWith('--')) { out.positional.push(a); continue; }
    const eq = a.indexOf('=');
    const name = a.slice(2, eq < 0 ? undefined : eq);
    if (spec.booleans.includes(name)) {
      const v = eq < 0 ? 'true' : a.slice(eq + 1);
      if (v !== 'true' && v !== 'false') throw new CommandError(`--${name}: want true or false, not "${v}"`);
      out.booleans.set(name, v === 'true');
      continue;
    }
    if (!spec.values.includes(name)) throw new CommandError(`unknown option --${name}`);
    let v: string | undefined;
    if (eq >= 0) v = a.slice(eq + 1);
    else { v = args[i + 1]; i++; }
    if (v === undefined) throw new CommandError(`--${name} needs a value`);
    out.values.set(name, [...(out.values.get(name) ?? []), v]);
  }
  return out;
}

/** The last value of an option, or the default. */
export function lastValue(p: ParsedCommand, name: string, fallback = ''): string {
  const v = p.values.get(name);
  return v && v.length ? v[v.length - 1]! : fallback;
}

/**
 * A Go duration (`24h`, `1h30m`, `90s`, `0`) in milliseconds, as kubeadm's --ttl takes it.
 */
export function parseGoDuration(text: string, option: string): number {
  if (text === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  const unit: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let ms = 0;
  let at = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) { ms += Number(m[1]) * unit[m[2]!]!; at = re.lastIndex; }
  if (at !== text.length || text === '') throw new CommandError(`--${option}: "${text}" is not a duration (for example 24h, 30m, 0 for never)`);
  return ms;
}
