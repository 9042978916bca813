/**
 * The Kubernetes protobuf descriptors embedded in the kubectl.1.NN binaries on this machine
 * (gogo-generated Go code keeps each generated.proto as a gzipped FileDescriptorProto), loaded
 * into protobufjs as an independent oracle for our schema and codec. Returns nothing when no
 * versioned kubectl is installed, so tests can skip cleanly.
 */
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { inflateRawSync } from 'node:zlib';
import protobuf from 'protobufjs';
import * as descriptorNs from 'protobufjs/ext/descriptor.js';
import type * as descriptorExt from 'protobufjs/ext/descriptor.js';

// A CommonJS module whose exports Node cannot list statically: the namespace's default holds them.
const descriptorMod = ((descriptorNs as unknown as { default?: typeof descriptorNs }).default ?? descriptorNs);

const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00]);

/** Versioned kubectl binaries (kubectl.1.27 ...), newest last. */
export function kubectlBinaries(): string[] {
  const dirs = new Set<string>();
  for (const d of (process.env.PATH ?? '').split(delimiter)) {
    const k = join(d, 'kubectl');
    if (!d || !existsSync(k)) continue;
    try { dirs.add(dirname(realpathSync(k))); } catch { /* dangling link */ }
    dirs.add(d);
  }
  const out: string[] = [];
  for (const d of dirs) {
    for (const f of readdirSync(d)) if (/^kubectl\.1\.\d+$/.test(f)) out.push(join(d, f));
  }
  const minor = (p: string): number => Number(p.split('.').pop());
  return [...new Set(out)].sort((a, b) => minor(a) - minor(b));
}

export interface KubectlDescriptors {
  binary: string;
  files: descriptorExt.IFileDescriptorProto[];
  root: protobuf.Root;
}

const cache = new Map<string, KubectlDescriptors>();

export function loadKubectlDescriptors(binary: string): KubectlDescriptors {
  const hit = cache.get(binary);
  if (hit) return hit;
  const bin = readFileSync(binary);
  const files: descriptorExt.IFileDescriptorProto[] = [];
  for (let pos = bin.indexOf(GZIP_HEADER); pos >= 0; pos = bin.indexOf(GZIP_HEADER, pos + 8)) {
    let data: Buffer;
    try { data = inflateRawSync(bin.subarray(pos + 10, pos + 10 + 4_000_000), { finishFlush: 2 }); } catch { continue; }
    try {
      const fd = descriptorMod.FileDescriptorProto.decode(data) as unknown as descriptorExt.IFileDescriptorProto;
      if (fd.name?.startsWith('k8s.io/')) files.push(fd);
    } catch { /* not a descriptor */ }
  }
  const root = protobuf.Root.fromDescriptor({ file: files });
  root.resolveAll();
  const out = { binary, files, root };
  cache.set(binary, out);
  return out;
}

/** The newest kubectl's descriptors, or undefined when none is installed. */
export function newestKubectlDescriptors(): KubectlDescriptors | undefined {
  const bins = kubectlBinaries();
  return bins.length ? loadKubectlDescriptors(bins[bins.length - 1]) : undefined;
}
