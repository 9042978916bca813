/**
 * Parsers and canonical printers of the single-valued option types. Each parser throws an Error
 * whose message is a short reason; the option parser adds the option name and the value.
 * Integer syntax follows Go's strconv.ParseInt with base 0 (as pflag uses): an optional sign,
 * then decimal, 0x hex, 0o or leading-0 octal, or 0b binary.
 */
import { canonicalCidr, canonicalIp } from '../util/ip.js';
import { formatDuration, parseDuration } from '../util/duration.js';

export interface PortRange {
  base: number;
  size: number;
}

const TRUE_WORDS = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE_WORDS = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** Go's strconv.ParseBool spellings. */
export function parseBool(text: string): boolean {
  if (TRUE_WORDS.has(text)) return true;
  if (FALSE_WORDS.has(text)) return false;
  throw new Error('not a boolean (use true or false)');
}

/** Go base-0 integer syntax; returns a safe JS integer or throws. */
export function parseGoInteger(text: string): number {
  const m = /^([+-]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$/.exec(text);
  if (!m) throw new Error('not an integer');
  const body = m[2] ?? '';
  let digits = body, radix = 10;
  if (/^0[xX]/.test(body)) { digits = body.slice(2); radix = 16; }
  else if (/^0[oO]/.test(body)) { digits = body.slice(2); radix = 8; }
  else if (/^0[bB]/.test(body)) { digits = body.slice(2); radix = 2; }
  else if (body.length > 1 && body.startsWith('0')) { digits = body.slice(1); radix = 8; }
  const big = BigInt(radix === 10 ? digits : `0${radix === 16 ? 'x' : radix === 8 ? 'o' : 'b'}${digits}`);
  const signed = m[1] === '-' ? -big : big;
  if (signed > BigInt(Number.MAX_SAFE_INTEGER) || signed < BigInt(Number.MIN_SAFE_INTEGER)) {
    throw new Error('integer out of range');
  }
  return Number(signed);
}

export function parseInt32(text: string): number {
  const n = parseGoInteger(text);
  if (n < -2147483648 || n > 2147483647) throw new Error('out of range for a 32-bit integer');
  return n;
}

export function parseUint(text: string): number {
  if (text.startsWith('-') || text.startsWith('+')) throw new Error('not an unsigned integer');
  return parseGoInteger(text);
}

const FLOAT = /^[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)$/i;

export function parseFloat64(text: string): number {
  if (!FLOAT.test(text)) throw new Error('not a number');
  const lower = text.toLowerCase().replace(/^\+/, '');
  if (lower === 'nan') return NaN;
  if (lower === 'inf' || lower === 'infinity') return Infinity;
  if (lower === '-inf' || lower === '-infinity') return -Infinity;
  return Number(text);
}

const FLOAT32_MAX = 3.4028234663852886e38;

export function parseFloat32(text: string): number {
  const n = parseFloat64(text);
  if (Number.isFinite(n) && Math.abs(n) > FLOAT32_MAX) throw new Error('out of range for a 32-bit float');
  return n;
}

export function formatFloat(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (n === Infinity) return '+Inf';
  if (n === -Infinity) return '-Inf';
  return String(n);
}

export function parseIpValue(text: string): string {
  if (text === '') return '';
  const ip = canonicalIp(text);
  if (ip === undefined) throw new Error('not an IP address');
  return ip;
}

export function parseIpNetValue(text: string): string {
  if (text === '') return '';
  const c = canonicalCidr(text);
  if (c === undefined) throw new Error('not a CIDR (expected address/prefix, for example 10.0.0.0/24)');
  return c;
}

/**
 * "a-b" (inclusive at both ends), "a+n" (a to a+n) or a single port "a"; empty means no range.
 */
export function parsePortRange(text: string): PortRange {
  const s = text.trim();
  if (s === '') return { base: 0, size: 0 };
  const m = /^(\d+)(?:([-+])(\d+))?$/.exec(s);
  if (!m) throw new Error('not a port range (expected low-high, for example 30000-32767)');
  const low = Number(m[1]);
  const high = m[2] === undefined ? low : m[2] === '+' ? low + Number(m[3]) : Number(m[3]);
  if (low > 65535 || high > 65535) throw new Error('port out of range 0-65535');
  if (high < low) throw new Error('end of the range is below its start');
  return { base: low, size: high - low + 1 };
}

export function formatPortRange(r: PortRange): string {
  if (r.size === 0) return '';
  return `${r.base}-${r.base + r.size - 1}`;
}

export function parseDurationValue(text: string): number {
  return parseDuration(text.trim());
}

export { formatDuration };

/** Value of --version: false, true (short line) or 'raw' (full version record). */
export type VersionMode = boolean | 'raw';

export function parseVersionMode(text: string): VersionMode {
  if (text === 'raw') return 'raw';
  try {
    return parseBool(text);
  } catch {
    throw new Error('expected true, false or raw');
  }
}
