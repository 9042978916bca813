// Dev-time helpers for scripts/gen-schema.mjs: read facts out of a kubectl binary.
//  - extractDescriptors: the gzipped FileDescriptorProtos that gogo-generated Go code embeds
//    (field numbers, wire types, repeated/map), for every k8s.io/* generated.proto.
//  - extractGoStructs: the Go runtime type information of every k8s.io/* struct (field kinds,
//    so pointer = optional, and struct tags: json name, omitempty, inline, patchStrategy,
//    patchMergeKey, protobuf number). Layouts are Go 1.2x's internal/abi (64-bit ELF).
import { readFileSync } from 'node:fs';
import { inflateRawSync } from 'node:zlib';
import descriptor from 'protobufjs/ext/descriptor/index.js';

const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00]);

export function extractDescriptors(bin) {
  const files = [];
  for (let pos = bin.indexOf(GZIP_HEADER); pos >= 0; pos = bin.indexOf(GZIP_HEADER, pos + 8)) {
    let data;
    try { data = inflateRawSync(bin.subarray(pos + 10, pos + 10 + 4_000_000), { finishFlush: 2 }); } catch { continue; }
    try {
      const fd = descriptor.FileDescriptorProto.decode(data);
      if (fd.name?.startsWith("k8s.io/")) files.push(descriptor.FileDescriptorProto.toObject(fd, { enums: String, defaults: true }));
    } catch { /* not a descriptor */ }
  }
  return files;
}

export const GO_KIND = { 1: 'bool', 5: 'int32', 6: 'int64', 10: 'uint32', 11: 'uint64', 13: 'float32', 14: 'float64', 17: 'array', 21: 'map', 22: 'ptr', 23: 'slice', 24: 'string', 25: 'struct' };

export function extractGoStructs(bin) {
  const shoff = Number(bin.readBigUInt64LE(0x28)), shentsize = bin.readUInt16LE(0x3a);
  const shnum = bin.readUInt16LE(0x3c), shstrndx = bin.readUInt16LE(0x3e);
  const secs = [];
  for (let i = 0; i < shnum; i++) {
    const o = shoff + i * shentsize;
    secs.push({ nameOff: bin.readUInt32LE(o), type: bin.readUInt32LE(o + 4), addr: Number(bin.readBigUInt64LE(o + 16)), off: Number(bin.readBigUInt64LE(o + 24)), size: Number(bin.readBigUInt64LE(o + 32)) });
  }
  const strtab = secs[shstrndx];
  for (const s of secs) { const st = strtab.off + s.nameOff; s.name = bin.toString('latin1', st, bin.indexOf(0, st)); }
  const sec = (n) => secs.find((s) => s.name === n);
  const fo = (va) => {
    for (const s of secs) if (s.type !== 8 && va >= s.addr && va < s.addr + s.size) return s.off + (va - s.addr);
    throw new Error(`address 0x${va.toString(16)} not in the file`);
  };
  const u64 = (va) => Number(bin.readBigUInt64LE(fo(va)));
  const rodata = sec('.rodata'), typelink = sec('.typelink');
  if (!rodata || !typelink) throw new Error('not a Go ELF binary with .typelink');
  const base = rodata.addr; // runtime.types: type name offsets are relative to it
  const varint = (o) => { let v = 0, s = 0, b; do { b = bin[o++]; v += (b & 0x7f) * 2 ** s; s += 7; } while (b & 0x80); return [v, o]; };
  const readName = (va) => {
    const o = fo(va), flags = bin[o];
    const [n, p] = varint(o + 1);
    const name = bin.toString('utf8', p, p + n);
    let tag = '';
    if (flags & 2) { const [tn, q] = varint(p + n); tag = bin.toString('utf8', q, q + tn); }
    return { name, tag };
  };
  const kindOf = (t) => bin[fo(t) + 23] & 0x1f;
  const typeName = (t) => { const o = fo(t); let n = readName(base + bin.readInt32LE(o + 40)).name; if (bin[o + 20] & 2) n = n.slice(1); return n; };
  const uncommonSize = { 25: 80, 22: 56, 23: 56, 17: 72 };
  for (const k of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 24]) uncommonSize[k] = 48;
  const pkgPath = (t) => {
    const o = fo(t);
    if (!(bin[o + 20] & 1)) return '';
    const size = uncommonSize[kindOf(t)];
    if (size === undefined) return '';
    const off = bin.readInt32LE(o + size);
    try { return off ? readName(base + off).name : ''; } catch { return ''; }
  };
  const describe = (t) => {
    const k = kindOf(t);
    const d = { kind: GO_KIND[k] ?? `k${k}`, name: typeName(t), pkg: pkgPath(t) };
    if (k === 22 || k === 23 || k === 17) d.elem = t + 0; // resolved lazily below
    return d;
  };
  const seen = new Set();
  const structs = new Map();
  const walk = (t) => {
    if (seen.has(t)) return;
    seen.add(t);
    const k = kindOf(t);
    if (k === 22 || k === 23 || k === 17) walk(u64(t + 48));
    else if (k === 21) { walk(u64(t + 48)); walk(u64(t + 56)); }
    else if (k === 25) {
      const fp = u64(t + 56), n = u64(t + 64);
      const fields = [];
      for (let i = 0; i < n; i++) {
        const f = fp + i * 24, ft = u64(f + 8);
        const { name, tag } = readName(u64(f));
        const type = describe(ft);
        if (type.kind === 'ptr' || type.kind === 'slice') { const e = u64(ft + 48); type.elem = { kind: GO_KIND[kindOf(e)] ?? '?', name: typeName(e), pkg: pkgPath(e) }; }
        fields.push({ name, tag, type });
        walk(ft);
      }
      const pp = pkgPath(t);
      if (pp.startsWith('k8s.io/')) structs.set(`${pp}.${typeName(t).split('.').pop()}`, { fields, kind: 'struct' });
    }
    if (k === 23 || k === 24) {
      const pp = pkgPath(t);
      if (pp.startsWith('k8s.io/')) structs.set(`${pp}.${typeName(t).split('.').pop()}`, { fields: [], kind: GO_KIND[k] });
    }
  };
  for (let i = 0; i < typelink.size; i += 4) walk(base + bin.readInt32LE(typelink.off + i));
  return structs;
}

/** Parses a Go struct tag into its key/value pairs. */
export function parseTag(tag) {
  const out = {};
  const re = /(\w+):"((?:[^"\\]|\\.)*)"/g;
  for (let m; (m = re.exec(tag));) out[m[1]] = m[2];
  return out;
}

export function readBinary(path) { return readFileSync(path); }
