// Our hand-written cri.proto against the CRI v1 descriptor compiled into the installed
// containerd binary (a gzipped FileDescriptorProto named "api.proto", package runtime.v1):
// every message field, enum value and RPC we declare must exist there with the same number,
// type, label and streaming. Skips when containerd is not installed.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import protobuf from 'protobufjs';
import { createRequire } from 'node:module';
import { criProtoPath } from '../../src/daemons/nodeagent/runtime/cri/cri-client.js';

function containerdBinary(): string | undefined {
  const r = spawnSync('sh', ['-c', 'command -v containerd'], { encoding: 'utf8' });
  const p = r.status === 0 ? r.stdout.trim() : '/usr/bin/containerd';
  return existsSync(p) ? p : undefined;
}

/** Finds the runtime.v1 api.proto descriptor among the gzip streams embedded in `bin`. */
function embeddedCriDescriptor(bin: Buffer): Buffer | undefined {
  const magic = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00]); // Go's gzip header
  for (let i = bin.indexOf(magic); i >= 0; i = bin.indexOf(magic, i + 1)) {
    let raw: Buffer;
    try {
      raw = gunzipSync(bin.subarray(i, Math.min(bin.length, i + 4 * 1024 * 1024)));
    } catch {
      continue;
    }
    // Peek at name (1) and package (2) before a full decode.
    const r = protobuf.Reader.create(raw);
    let name = '';
    let pkg = '';
    try {
      while (r.pos < r.len && (!name || !pkg)) {
        const tag = r.uint32();
        if (tag >>> 3 === 1) name = r.string();
        else if (tag >>> 3 === 2) pkg = r.string();
        else r.skipType(tag & 7);
      }
    } catch {
      continue;
    }
    if (name.endsWith('api.proto') && pkg === 'runtime.v1') return raw;
  }
  return undefined;
}

// protobufjs' descriptor extension is CommonJS without static named exports: load it with require.
type DescriptorModule = typeof import('protobufjs/ext/descriptor.js');
const descriptor = createRequire(import.meta.url)('protobufjs/ext/descriptor') as DescriptorModule;
const rootFromDescriptor = (protobuf.Root as unknown as { fromDescriptor(set: unknown): protobuf.Root }).fromDescriptor;

const bin = containerdBinary();
t.test('cri.proto matches the CRI v1 descriptor inside containerd', { skip: bin ? false : 'containerd not installed' }, async (t) => {
  const raw = embeddedCriDescriptor(readFileSync(bin ?? ''));
  if (!raw) { t.fail('no runtime.v1 api.proto descriptor found in the containerd binary'); return; }
  const file = descriptor.FileDescriptorProto.decode(raw) as unknown as { dependency: string[]; name: string };
  file.dependency = []; // gogo.proto only carries options we do not need
  const set = descriptor.FileDescriptorSet.create({ file: [file] });
  const theirs = rootFromDescriptor(set).resolveAll();
  const ours = protobuf.loadSync(criProtoPath()).resolveAll();

  let fields = 0;
  let enumValues = 0;
  let methods = 0;
  const problems: string[] = [];
  const typeName = (f: protobuf.Field): string => f.resolvedType ? f.resolvedType.fullName : f.type;

  const visit = (ns: protobuf.NamespaceBase): void => {
    for (const obj of ns.nestedArray) {
      if (obj instanceof protobuf.Type) {
        const other = theirs.lookup(obj.fullName);
        if (!(other instanceof protobuf.Type)) { problems.push(`message ${obj.fullName} missing`); continue; }
        for (const f of obj.fieldsArray) {
          fields++;
          const o = other.fields[f.name];
          if (!o) { problems.push(`${obj.fullName}.${f.name} missing`); continue; }
          if (o.id !== f.id) problems.push(`${obj.fullName}.${f.name}: number ${f.id} vs ${o.id}`);
          if (typeName(o) !== typeName(f)) problems.push(`${obj.fullName}.${f.name}: type ${typeName(f)} vs ${typeName(o)}`);
          if (o.repeated !== f.repeated) problems.push(`${obj.fullName}.${f.name}: repeated ${f.repeated} vs ${o.repeated}`);
          if (o.map !== f.map) problems.push(`${obj.fullName}.${f.name}: map ${f.map} vs ${o.map}`);
          if (f instanceof protobuf.MapField && o instanceof protobuf.MapField && f.keyType !== o.keyType) {
            problems.push(`${obj.fullName}.${f.name}: map key ${f.keyType} vs ${o.keyType}`);
          }
        }
        visit(obj);
      } else if (obj instanceof protobuf.Enum) {
        const other = theirs.lookup(obj.fullName);
        if (!(other instanceof protobuf.Enum)) { problems.push(`enum ${obj.fullName} missing`); continue; }
        for (const [name, n] of Object.entries(obj.values)) {
          enumValues++;
          if (other.values[name] !== n) problems.push(`${obj.fullName}.${name}: ${n} vs ${String(other.values[name])}`);
        }
      } else if (obj instanceof protobuf.Service) {
        const other = theirs.lookup(obj.fullName);
        if (!(other instanceof protobuf.Service)) { problems.push(`service ${obj.fullName} missing`); continue; }
        for (const m of obj.methodsArray) {
          methods++;
          const o = other.methods[m.name];
          if (!o) { problems.push(`rpc ${obj.fullName}.${m.name} missing`); continue; }
          if (o.resolvedRequestType?.fullName !== m.resolvedRequestType?.fullName) problems.push(`rpc ${m.name}: request type differs`);
          if (o.resolvedResponseType?.fullName !== m.resolvedResponseType?.fullName) problems.push(`rpc ${m.name}: response type differs`);
          if (Boolean(o.requestStream) !== Boolean(m.requestStream) || Boolean(o.responseStream) !== Boolean(m.responseStream)) {
            problems.push(`rpc ${m.name}: streaming differs`);
          }
        }
      } else if (obj instanceof protobuf.Namespace) {
        visit(obj);
      }
    }
  };
  visit(ours);
  t.same(problems, [], 'no differences');
  t.ok(fields > 200, `compared ${fields} fields`);
  t.ok(enumValues >= 19, `compared ${enumValues} enum values`);
  t.ok(methods >= 24, `compared ${methods} RPCs`);
});
