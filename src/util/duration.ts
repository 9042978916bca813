/**
 * Go time.Duration text <-> milliseconds.
 *
 * Options carry durations as a number of milliseconds (fractional below 1 ms). Parsing follows
 * Go's time.ParseDuration: an optional sign, then one or more `<decimal><unit>` parts with units
 * ns, us (µs, μs), ms, s, m, h; a bare "0" is allowed. Printing follows time.Duration.String,
 * so 60000 prints as "1m0s" and 31536000000 as "8760h0m0s". Arithmetic runs on BigInt
 * nanoseconds because a year in nanoseconds exceeds Number.MAX_SAFE_INTEGER.
 */

const UNIT_NS: Readonly<Record<string, bigint>> = {
  ns: 1n,
  us: 1_000n,
  'µs': 1_000n, // U+00B5 micro sign
  'μs': 1_000n, // U+03BC Greek mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

const MAX_NS = (1n << 63n) - 1n;
const PART = /^(\d*)(?:\.(\d*))?([a-zµμ]+)/;

/** Parses Go duration text into nanoseconds; throws Error with a short reason on bad input. */
export function parseDurationNs(text: string): bigint {
  let s = text;
  let negative = false;
  if (s.startsWith('-') || s.startsWith('+')) {
    negative = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return 0n;
  if (s === '') throw new Error(`invalid duration "${text}"`);
  let total = 0n;
  while (s.length > 0) {
    const m = PART.exec(s);
    if (!m) throw new Error(`invalid duration "${text}"`);
    const whole = m[1] ?? '';
    const frac = m[2];
    const unitName = m[3] ?? '';
    if (whole === '' && (frac === undefined || frac === '')) throw new Error(`invalid duration "${text}"`);
    const unit = UNIT_NS[unitName];
    if (unit === undefined) throw new Error(`unknown unit "${unitName}" in duration "${text}"`);
    let part = BigInt(whole === '' ? '0' : whole) * unit;
    if (frac !== undefined && frac !== '') {
      // Go truncates the fractional part below one nanosecond.
      part += (BigInt(frac) * unit) / 10n ** BigInt(frac.length);
    }
    total += part;
    if (total > MAX_NS) throw new Error(`invalid duration "${text}": out of range`);
    s = s.slice(m[0].length);
  }
  return negative ? -total : total;
}

/** Parses Go duration text into milliseconds. */
export function parseDuration(text: string): number {
  return nsToMs(parseDurationNs(text));
}

export function nsToMs(ns: bigint): number {
  return Number(ns / 1_000_000n) + Number(ns % 1_000_000n) / 1e6;
}

export function msToNs(ms: number): bigint {
  const whole = Math.trunc(ms);
  return BigInt(whole) * 1_000_000n + BigInt(Math.round((ms - whole) * 1e6));
}

/** Prints milliseconds the way Go's time.Duration.String prints the same duration. */
export function formatDuration(ms: number): string {
  return formatDurationNs(msToNs(ms));
}

export function formatDurationNs(nsIn: bigint): string {
  if (nsIn === 0n) return '0s';
  const negative = nsIn < 0n;
  const ns = negative ? -nsIn : nsIn;
  const sign = negative ? '-' : '';
  if (ns < 1_000_000_000n) {
    if (ns < 1_000n) return `${sign}${ns}ns`;
    if (ns < 1_000_000n) return `${sign}${fixed(ns, 3)}µs`;
    return `${sign}${fixed(ns, 6)}ms`;
  }
  let secs = ns / 1_000_000_000n;
  const fracNs = ns % 1_000_000_000n;
  let out = `${secs % 60n}${fraction(fracNs, 9)}s`;
  secs /= 60n;
  if (secs > 0n) {
    out = `${secs % 60n}m${out}`;
    const hours = secs / 60n;
    if (hours > 0n) out = `${hours}h${out}`;
  }
  return sign + out;
}

/** value / 10^digits as decimal text without trailing zeros. */
function fixed(value: bigint, digits: number): string {
  const scale = 10n ** BigInt(digits);
  return `${value / scale}${fraction(value % scale, digits)}`;
}

function fraction(rem: bigint, digits: number): string {
  if (rem === 0n) return '';
  return '.' + rem.toString().padStart(digits, '0').replace(/0+$/, '');
}
