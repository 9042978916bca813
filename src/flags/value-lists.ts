/**
 * Parsers and printers of the list and map option types: stringSlice, mapStringString,
 * mapStringBool, namedCertKey and taints. Repetition rules live in value-types.ts.
 */
import { parseBool } from './value-scalars.js';

/** Splits a comma-separated list; double-quoted fields may contain commas (CSV, as pflag does). */
export function splitCsv(text: string): string[] {
  if (text === '') return [];
  const out: string[] = [];
  let field = '', quoted = false, i = 0;
  while (i < text.length) {
    const ch = text[i] ?? '';
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') { field += '"'; i += 2; continue; }
      if (ch === '"') { quoted = false; i++; continue; }
      field += ch; i++; continue;
    }
    if (ch === '"' && field === '') { quoted = true; i++; continue; }
    if (ch === ',') { out.push(field); field = ''; i++; continue; }
    field += ch; i++;
  }
  if (quoted) throw new Error('unterminated quote in list');
  out.push(field);
  return out;
}

/**
 * "k=v,k2=v2". Also accepts the eviction-threshold form "signal<quantity" for the same pair,
 * so --eviction-hard=memory.available<100Mi yields { 'memory.available': '100Mi' }.
 * Keys and values are trimmed; an empty text is an empty map.
 */
export function parseStringMap(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split(',')) {
    const pair = raw.trim();
    if (pair === '') {
      if (text.trim() === '') continue;
      throw new Error('empty entry in key=value list');
    }
    const eq = pair.indexOf('='), lt = pair.indexOf('<');
    const at = eq < 0 ? lt : lt < 0 ? eq : Math.min(eq, lt);
    if (at <= 0) throw new Error(`malformed pair "${pair}" (expected key=value)`);
    out[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
  }
  return out;
}

export function formatStringMap(m: Record<string, string>): string {
  return Object.keys(m).sort().map((k) => `${k}=${m[k] ?? ''}`).join(',');
}

export function parseBoolMap(text: string): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  for (const raw of text.split(',')) {
    const pair = raw.trim();
    if (pair === '') {
      if (text.trim() === '') continue;
      throw new Error('empty entry in key=value list');
    }
    const at = pair.indexOf('=');
    if (at <= 0) throw new Error(`malformed pair "${pair}" (expected key=true|false)`);
    const key = pair.slice(0, at).trim();
    const value = pair.slice(at + 1).trim();
    try {
      out[key] = parseBool(value);
    } catch {
      throw new Error(`value "${value}" of "${key}" is not a boolean`);
    }
  }
  return out;
}

export function formatBoolMap(m: Record<string, boolean>): string {
  return Object.keys(m).sort().map((k) => `${k}=${String(m[k])}`).join(',');
}

export interface NamedCertKey {
  certFile: string;
  keyFile: string;
  /** Domain patterns; empty means the names come from the certificate. */
  names: string[];
}

/** "cert,key" optionally followed by ":pattern,pattern". */
export function parseNamedCertKey(text: string): NamedCertKey {
  const colon = text.indexOf(':');
  const pairText = (colon < 0 ? text : text.slice(0, colon)).trim();
  let names: string[] = [];
  if (colon >= 0) {
    names = text.slice(colon + 1).split(',').map((n) => n.trim());
    if (names.every((n) => n === '')) throw new Error('empty list of names after ":"');
    if (names.some((n) => n === '')) throw new Error('empty name in the list of names');
  }
  const files = pairText.split(',').map((f) => f.trim());
  if (files.length !== 2 || files[0] === '' || files[1] === '') {
    throw new Error('expected certfile,keyfile optionally followed by :names');
  }
  return { certFile: files[0] ?? '', keyFile: files[1] ?? '', names };
}

export function formatNamedCertKey(n: NamedCertKey): string {
  return `${n.certFile},${n.keyFile}${n.names.length ? ':' + n.names.join(',') : ''}`;
}

export type TaintEffect = 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
export const TAINT_EFFECTS: readonly TaintEffect[] = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

export interface Taint {
  key: string;
  /** Empty when the taint was given as key:Effect. */
  value: string;
  effect: TaintEffect;
}

const NAME_PART = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A Kubernetes qualified name: optional "dns.prefix/" then a name of at most 63 characters. */
export function isQualifiedName(key: string): boolean {
  const slash = key.lastIndexOf('/');
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (slash >= 0) {
    const prefix = key.slice(0, slash);
    if (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)) return false;
  }
  return name.length > 0 && name.length <= 63 && NAME_PART.test(name);
}

function parseOneTaint(spec: string): Taint {
  const colon = spec.lastIndexOf(':');
  if (colon < 0) throw new Error(`taint "${spec}" lacks an effect (expected key=value:Effect or key:Effect)`);
  const effect = spec.slice(colon + 1);
  if (!(TAINT_EFFECTS as readonly string[]).includes(effect)) {
    throw new Error(`taint "${spec}" has unknown effect "${effect}" (one of ${TAINT_EFFECTS.join(', ')})`);
  }
  const kv = spec.slice(0, colon);
  const eq = kv.indexOf('=');
  const key = eq < 0 ? kv : kv.slice(0, eq);
  const value = eq < 0 ? '' : kv.slice(eq + 1);
  if (!isQualifiedName(key)) throw new Error(`taint key "${key}" is not a valid qualified name`);
  if (value !== '' && (value.length > 63 || !NAME_PART.test(value))) {
    throw new Error(`taint value "${value}" is not a valid label value`);
  }
  return { key, value, effect: effect as TaintEffect };
}

/** Comma-separated taints; the same key and effect may not appear twice. */
export function parseTaints(text: string): Taint[] {
  if (text.trim() === '') return [];
  const out: Taint[] = [];
  for (const spec of text.split(',')) {
    const t = parseOneTaint(spec.trim());
    if (out.some((o) => o.key === t.key && o.effect === t.effect)) {
      throw new Error(`duplicate taint with key "${t.key}" and effect ${t.effect}`);
    }
    out.push(t);
  }
  return out;
}

export function formatTaints(ts: readonly Taint[]): string {
  return ts.map((t) => `${t.key}${t.value === '' ? '' : '=' + t.value}:${t.effect}`).join(',');
}
