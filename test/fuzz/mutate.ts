/**
 * Mutations of request bodies: structural ones on JSON values (drop, retype, inflate, add
 * unknown or oddly named fields, nest deeply) and byte-level ones on encoded bodies (flip,
 * truncate, splice, insert invalid UTF-8), as a fuzzer that knows the shape of the input.
 */
import type { Prng } from './prng.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Values that have broken parsers and validators before. */
const ODD_VALUES: readonly Json[] = [
  null, true, false, 0, -1, 1.5, 1e308, -1e308, 9007199254740993, 9223372036854775807, 2 ** 31, -(2 ** 31) - 1,
  '', ' ', 'a'.repeat(300), '\u0000', '\ud800', '\u202e', 'é', '日本', '😀', '../..', '%00', 'a/b', '*', '-', '.', '__proto__',
  '1Gi', '-1', '100m', '1e3', 'NaN', 'Infinity', '2006-01-02T15:04:05Z', 'not-a-date', '0.0.0.0', '127.0.0.1', '::1', '999.1.1.1',
  [], [null], [[]], {}, { '': 1 }, { __proto__: 1 } as unknown as Json, { constructor: { prototype: 1 } },
];

const ODD_KEYS: readonly string[] = [
  'bogus', '', ' ', 'é', '日本', '😀', '\u0000', '\u00ff', '\u0100', '\ud800', 'a\nb', 'a"b', 'apiVersion', 'kind',
  'metadata', '__proto__', 'constructor', '$patch', '$retainKeys', '$setElementOrder/containers', '$deleteFromPrimitiveList/finalizers',
];

/** A fresh copy of an odd value: mutations change values in place, never the shared table's. */
function odd(rng: Prng): Json {
  const v = rng.pick(ODD_VALUES);
  return typeof v === 'object' && v !== null ? JSON.parse(JSON.stringify(v)) as Json : v;
}

function isObject(v: Json): v is { [k: string]: Json } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Every (container, key) path in a value, for picking a place to mutate. */
function places(v: Json, out: Array<{ parent: { [k: string]: Json } | Json[]; key: string | number }> = [], depth = 0): typeof out {
  if (depth > 12) return out;
  if (Array.isArray(v)) v.forEach((c, i) => { out.push({ parent: v, key: i }); places(c, out, depth + 1); });
  else if (isObject(v)) for (const k of Object.keys(v)) { out.push({ parent: v, key: k }); places(v[k]!, out, depth + 1); }
  return out;
}

function deep(n: number): Json {
  let v: Json = 1;
  for (let i = 0; i < n; i++) v = { a: v };
  return v;
}

/** One to three structural mutations of a copy of `value`. */
export function mutateJson(rng: Prng, value: unknown): unknown {
  const v = JSON.parse(JSON.stringify(value)) as Json;
  const n = 1 + rng.int(3);
  for (let i = 0; i < n; i++) {
    const ps = places(v);
    if (ps.length === 0) return odd(rng);
    const p = rng.pick(ps);
    const parent = p.parent as Record<string | number, Json>;
    switch (rng.int(8)) {
      case 0: if (Array.isArray(p.parent)) p.parent.splice(p.key as number, 1); else delete parent[p.key]; break;
      case 1: parent[p.key] = odd(rng); break;
      case 2: { const target = parent[p.key]; if (isObject(target)) target[rng.pick(ODD_KEYS)] = odd(rng); else parent[p.key] = { [rng.pick(ODD_KEYS)]: odd(rng) }; break; }
      case 3: parent[p.key] = [parent[p.key]!, JSON.parse(JSON.stringify(parent[p.key] ?? null)) as Json]; break;
      case 4: parent[p.key] = deep(20 + rng.int(200)); break;
      case 5: { const t = parent[p.key]; parent[p.key] = typeof t === 'string' ? Number(t) || t.length : typeof t === 'number' ? String(t) : JSON.stringify(t); break; }
      case 6: if (Array.isArray(parent[p.key])) (parent[p.key] as Json[]).push(...Array.from({ length: 50 }, () => odd(rng))); else parent[p.key] = 'x'.repeat(rng.pick([63, 64, 253, 254, 65536])); break;
      default: if (isObject(v)) v[rng.pick(ODD_KEYS)] = odd(rng); break;
    }
  }
  return v;
}

/** Byte-level damage to an encoded body. */
export function mutateBytes(rng: Prng, body: Buffer): Buffer {
  const b = Buffer.from(body);
  switch (rng.int(7)) {
    case 0: return b.subarray(0, rng.int(b.length + 1));
    case 1: { for (let i = 0; i < 1 + rng.int(8); i++) if (b.length) b[rng.int(b.length)] = rng.int(256); return b; }
    case 2: { const at = rng.int(b.length + 1); return Buffer.concat([b.subarray(0, at), Buffer.from([rng.pick([0xff, 0xfe, 0xc0, 0x80, 0xed, 0xa0, 0x00])]), b.subarray(at)]); }
    case 3: { const at = rng.int(b.length + 1); const len = rng.int(32); return Buffer.concat([b.subarray(0, at), b.subarray(at + len)]); }
    case 4: return Buffer.concat([b, b.subarray(0, rng.int(b.length + 1))]);
    case 5: { const at = rng.int(b.length + 1); return Buffer.concat([b.subarray(0, at), Buffer.from(rng.pick(['{', '}', '[', ']', '"', ',', ':', '\\u', '\\ud800', '0x', '\n---\n', '&a', '*a', '!!binary', '? ']), 'utf8'), b.subarray(at)]); }
    default: { if (b.length > 1) { const i = rng.int(b.length - 1); const t = b[i]!; b[i] = b[i + 1]!; b[i + 1] = t; } return b; }
  }
}
