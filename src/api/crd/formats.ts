/**
 * The string formats custom resources are validated against: those of kube-openapi's default
 * registry that apiextensions supports (its supportedVersionedFormats as of Kubernetes 1.33).
 * Other formats, including int32, int64, float and double, are not validated at all: Kubernetes
 * strips them before building the validator. Names compare without dashes ("date-time" is
 * "datetime").
 */
import { isIPv4, isIPv6 } from 'node:net';

const normalize = (format: string): string => format.replaceAll('-', '');

const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
const UUID3 = /^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
const UUID4 = /^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$/i;
const UUID5 = /^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$/i;
const HOST_CHAR = '[a-zA-Z0-9\\p{S}\\p{L}]';
const HOSTNAME = new RegExp(`^(${HOST_CHAR}((-?${HOST_CHAR}{0,62})?)|(${HOST_CHAR}(([a-zA-Z0-9\\-\\p{S}\\p{L}]{0,61}${HOST_CHAR})?)(\\.)){1,}(${HOST_CHAR})(-?${HOST_CHAR}){1,62})$`, 'u');
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$/;
const MAC = /^(?:[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){5}|[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){7}|[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){19}|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){2}|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){3}|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){9})$/;
const RGB_PART = '\\s*(0|[1-9]\\d?|1\\d\\d?|2[0-4]\\d|25[0-5])\\s*';
const RGB = new RegExp(`^rgb\\(${RGB_PART},${RGB_PART},${RGB_PART}\\)$`);
const CREDIT_CARD = /^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01][0-9]|2720)[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11}|6[27][0-9]{14})$/;
const DATE_TIME_CLOCK = /^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$/;
const GO_DURATION = /^[-+]?(0|((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)$/;
const DURATION_UNITS = [['ns', 'nano'], ['us', 'µs', 'micro'], ['ms', 'milli'], ['s', 'sec'], ['m', 'min'], ['h', 'hr', 'hour'], ['d', 'day'], ['w', 'wk', 'week']];

function isDate(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const t = new Date(Date.UTC(y, mo - 1, d));
  return t.getUTCFullYear() === y && t.getUTCMonth() === mo - 1 && t.getUTCDate() === d;
}

function isDateTime(s: string): boolean {
  if (s.length < 4) return false;
  const parts = s.toLowerCase().split('t');
  if (parts.length < 2 || !isDate(parts[0]!)) return false;
  const m = DATE_TIME_CLOCK.exec(parts[1]!);
  return !!m && m[1]! <= '23' && m[2]! <= '59' && m[3]! <= '59';
}

/** Go's time.ParseDuration, or the Scala-like "3 days" forms kube-openapi also accepts. */
function isDuration(s: string): boolean {
  if (GO_DURATION.test(s)) return true;
  for (const m of s.matchAll(/(\d+)\s*([A-Za-zµ]+)/g)) {
    const unit = m[2]!.toLowerCase().trim();
    for (const variants of DURATION_UNITS) {
      const last = variants.length - 1;
      if (variants.some((v, i) => v === unit || (i === last && unit.startsWith(v)))) return true;
    }
  }
  return false;
}

function isHostname(s: string): boolean {
  if (!HOSTNAME.test(s) || Buffer.byteLength(s) > 255) return false;
  return s.split('.').every((label) => Buffer.byteLength(label) <= 63);
}

function isCidr(s: string): boolean {
  const slash = s.indexOf('/');
  if (slash < 0) return false;
  const ip = s.slice(0, slash);
  const bits = s.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bits)) return false;
  if (isIPv4(ip)) return Number(bits) <= 32;
  return isIPv6(ip) && !ip.includes('%') && Number(bits) <= 128;
}

function isEmail(s: string): boolean {
  const addr = /<([^<>]*)>\s*$/.exec(s)?.[1] ?? s.trim();
  return /^[^\s@<>()[\],;:"]+@[^\s@<>()[\],;:"]+$/.test(addr);
}

function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) { d *= 2; if (d > 9) d -= 9; }
    sum += d;
  }
  return sum % 10 === 0;
}

function isIsbn10(s: string): boolean {
  const v = s.replace(/[\s-]/g, '');
  if (!/^(?:[0-9]{9}X|[0-9]{10})$/.test(v)) return false;
  let sum = 0;
  for (let i = 0; i < 10; i++) sum += (i + 1) * (v[i] === 'X' ? 10 : Number(v[i]));
  return sum % 11 === 0;
}

function isIsbn13(s: string): boolean {
  const v = s.replace(/[\s-]/g, '');
  if (!/^[0-9]{13}$/.test(v)) return false;
  let sum = 0;
  for (let i = 0; i < 12; i++) sum += Number(v[i]) * (i % 2 === 0 ? 1 : 3);
  return (10 - (sum % 10)) % 10 === Number(v[12]);
}

const CHECKS: Record<string, (s: string) => boolean> = {
  bsonobjectid: (s) => /^[0-9a-fA-F]{24}$/.test(s),
  uri: (s) => s.startsWith('/') || /^[a-zA-Z][a-zA-Z0-9+.-]*:\S*$/.test(s),
  email: isEmail,
  hostname: isHostname,
  ipv4: (s) => isIPv4(s) || (isIPv6(s) && !s.includes('%') && s.includes('.')),
  ipv6: (s) => isIPv6(s) && !s.includes('%'),
  cidr: isCidr,
  mac: (s) => MAC.test(s),
  uuid: (s) => UUID.test(s),
  uuid3: (s) => UUID3.test(s),
  uuid4: (s) => UUID4.test(s),
  uuid5: (s) => UUID5.test(s),
  isbn: (s) => isIsbn10(s) || isIsbn13(s),
  isbn10: isIsbn10,
  isbn13: isIsbn13,
  creditcard: (s) => { const d = s.replace(/[^0-9]/g, ''); return CREDIT_CARD.test(d) && luhn(d); },
  ssn: (s) => s.length === 11 && /^\d{3}[- ]?\d{2}[- ]?\d{4}$/.test(s),
  hexcolor: (s) => /^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/.test(s),
  rgbcolor: (s) => RGB.test(s),
  byte: (s) => BASE64.test(s),
  password: () => true,
  date: isDate,
  duration: isDuration,
  datetime: isDateTime,
};

/** Whether custom-resource validation honours this format (others are ignored). */
export function isSupportedFormat(format: string): boolean {
  return Object.hasOwn(CHECKS, normalize(format));
}

/** Whether `s` is valid in `format`; undefined when the format is not one that is checked. */
export function checkFormat(format: string, s: string): boolean | undefined {
  const name = normalize(format);
  return Object.hasOwn(CHECKS, name) ? CHECKS[name]!(s) : undefined;
}
