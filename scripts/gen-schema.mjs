#!/usr/bin/env node
// Dev-time generator of src/api/schema/generated/*.ts (the output is committed and reviewed).
//
// Facts come from a kubectl binary already on the machine (kubectl.1.33 by default):
//   - field numbers, scalar types, repeated and map fields: the embedded FileDescriptorProtos;
//   - JSON names, Go pointers (=> optional), `json:",inline"`, patchStrategy and patchMergeKey:
//     the Go runtime type information and struct tags of the k8s.io/* types in the same binary.
// What neither carries (list types, map types, required, served kinds, fields newer than the
// binary) is the hand-written table in src/api/schema/patch-metadata.ts, applied by registry.ts.
//
// Usage: node scripts/gen-schema.mjs [path/to/kubectl.1.NN]
import { execSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { extractDescriptors, extractGoStructs, parseTag, readBinary } from './gen-schema-binary.mjs';

const SERVED_PACKAGES = [
  'k8s.io.api.core.v1', 'k8s.io.api.apps.v1', 'k8s.io.api.batch.v1', 'k8s.io.api.batch.v1beta1',
  'k8s.io.api.autoscaling.v1', 'k8s.io.api.autoscaling.v2', 'k8s.io.api.certificates.v1',
  'k8s.io.api.certificates.v1beta1', 'k8s.io.api.storage.v1', 'k8s.io.api.rbac.v1', 'k8s.io.api.policy.v1',
  'k8s.io.api.policy.v1beta1', 'k8s.io.api.extensions.v1beta1', 'k8s.io.api.coordination.v1', 'k8s.io.api.networking.v1', 'k8s.io.api.events.v1',
  'k8s.io.api.discovery.v1', 'k8s.io.api.authentication.v1', 'k8s.io.api.authorization.v1',
  'k8s.io.api.apidiscovery.v2', 'k8s.io.api.apidiscovery.v2beta1',
  'k8s.io.api.admissionregistration.v1', 'k8s.io.api.admission.v1', 'k8s.io.api.scheduling.v1', 'k8s.io.api.node.v1',
  'k8s.io.apimachinery.pkg.apis.meta.v1', 'k8s.io.apimachinery.pkg.runtime',
  'k8s.io.apimachinery.pkg.api.resource', 'k8s.io.apimachinery.pkg.util.intstr',
];

const SCALARS = {
  TYPE_STRING: 'string', TYPE_BOOL: 'bool', TYPE_INT32: 'int32', TYPE_INT64: 'int64', TYPE_UINT32: 'uint32',
  TYPE_UINT64: 'uint64', TYPE_DOUBLE: 'double', TYPE_FLOAT: 'float', TYPE_BYTES: 'bytes',
};

function findKubectl() {
  if (process.argv[2]) return process.argv[2];
  const real = execSync('readlink -f "$(command -v kubectl)"', { encoding: 'utf8' }).trim();
  const dir = dirname(real);
  const versions = readdirSync(dir).filter((f) => /^kubectl\.1\.\d+$/.test(f)).sort((a, b) => Number(a.split('.')[2]) - Number(b.split('.')[2]));
  if (!versions.length) throw new Error(`no kubectl.1.NN next to ${real}`);
  return join(dir, versions[versions.length - 1]);
}

const kubectl = findKubectl();
const bin = readBinary(kubectl);
const files = extractDescriptors(bin);
const goTypes = extractGoStructs(bin);

// fully qualified message name -> { pkg, goPkg, desc }
const messages = new Map();
for (const f of files) {
  const goPkg = dirname(f.name);
  for (const m of f.messageType) messages.set(`${f.package}.${m.name}`, { pkg: f.package, goPkg, desc: m });
}

// Closure of everything reachable from the served packages.
const wanted = new Set();
const queue = [...messages.keys()].filter((n) => SERVED_PACKAGES.includes(messages.get(n).pkg));
while (queue.length) {
  const n = queue.pop();
  if (wanted.has(n)) continue;
  const m = messages.get(n);
  if (!m) throw new Error(`unknown message ${n}`);
  wanted.add(n);
  for (const f of m.desc.field) {
    if (f.type !== 'TYPE_MESSAGE') continue;
    const t = f.typeName.slice(1);
    const entry = mapEntry(m, t);
    if (entry) { const v = entry.field.find((x) => x.number === 2); if (v.type === 'TYPE_MESSAGE') queue.push(v.typeName.slice(1)); }
    else queue.push(t);
  }
}

function mapEntry(m, typeName) {
  const short = typeName.split('.').pop();
  return m.desc.nestedType.find((n) => n.name === short && n.options?.mapEntry && typeName.startsWith(`${m.pkg}.`));
}

const listWrappers = new Set();
const warnings = [];

function fieldDecl(m, f, goStruct) {
  const d = {};
  const goField = goStruct?.fields.find((g) => {
    const p = parseTag(g.tag).protobuf;
    return p && Number(p.split(',')[1]) === f.number;
  });
  const tags = goField ? parseTag(goField.tag) : {};
  const jsonTag = (tags.json ?? '').split(',');
  const inline = jsonTag.slice(1).includes('inline') || (goField && jsonTag[0] === '' && goField.tag.includes('json:",inline"'));
  if (jsonTag[0] === '-') jsonTag[0] = '';
  d.name = jsonTag[0] || f.name;
  if (goField && jsonTag[0] && jsonTag[0] !== f.name) warnings.push(`${m.pkg}.${m.desc.name}.${f.name}: JSON name ${jsonTag[0]}`);
  d.number = f.number;
  const entry = f.type === 'TYPE_MESSAGE' ? mapEntry(m, f.typeName.slice(1)) : undefined;
  let valueField = f;
  if (entry) { d.map = true; valueField = entry.field.find((x) => x.number === 2); }
  d.type = valueField.type === 'TYPE_MESSAGE' ? { message: valueField.typeName.slice(1) } : { scalar: SCALARS[valueField.type] };
  if (!d.type.scalar && !d.type.message) throw new Error(`unsupported type ${valueField.type} in ${m.desc.name}.${f.name}`);
  if (f.label === 'LABEL_REPEATED' && !entry) d.repeated = true;
  if (goField) {
    const gk = goField.type.kind;
    if (gk === 'ptr') d.optional = true;
    // A Go slice declared as a message in protobuf (meta.v1 Verbs, authentication ExtraValue):
    // the message is a list wrapper whose JSON form is a plain array.
    if (d.type.message && !d.repeated && !d.map && gk === 'slice') listWrappers.add(d.type.message);
    if (inline) d.inline = true;
    const scalarGo = ['bool', 'int32', 'int64', 'uint32', 'uint64', 'float32', 'float64', 'string'].includes(gk);
    if (scalarGo && d.type.scalar && !d.repeated && !d.map && jsonTag[0] && !jsonTag.slice(1).includes('omitempty')) d.emitEmpty = true;
    // A slice or map without omitempty: Go writes it even when empty (null or []).
    if ((d.repeated || d.map) && jsonTag[0] && !jsonTag.slice(1).includes('omitempty')) d.keepEmpty = true;
    if (tags.patchStrategy) d.patchStrategy = tags.patchStrategy;
    if (tags.patchMergeKey) d.patchMergeKey = tags.patchMergeKey;
  } else if (goStruct && goStruct.kind === 'struct' && goStruct.fields.length) {
    warnings.push(`${m.pkg}.${m.desc.name}.${f.name}: no Go field`);
  }
  return d;
}

const q = (s) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

function render(d) {
  const parts = [`name: ${q(d.name)}`, `number: ${d.number}`,
    d.type.scalar ? `type: { scalar: '${d.type.scalar}' }` : `type: { message: '${d.type.message}' }`];
  for (const k of ['repeated', 'map', 'optional', 'inline', 'emitEmpty', 'keepEmpty']) if (d[k]) parts.push(`${k}: true`);
  if (d.patchStrategy) parts.push(`patchStrategy: ${q(d.patchStrategy)}`);
  if (d.patchMergeKey) parts.push(`patchMergeKey: ${q(d.patchMergeKey)}`);
  return `{ ${parts.join(', ')} }`;
}

function fileStem(pkg) {
  if (pkg.startsWith('k8s.io.api.')) return pkg.slice('k8s.io.api.'.length).replace(/\./g, '-');
  return { 'k8s.io.apimachinery.pkg.apis.meta.v1': 'meta-v1', 'k8s.io.apimachinery.pkg.runtime': 'runtime',
    'k8s.io.apimachinery.pkg.api.resource': 'resource', 'k8s.io.apimachinery.pkg.util.intstr': 'intstr',
    'k8s.io.apimachinery.pkg.runtime.schema': 'runtime-schema' }[pkg] ?? pkg.replace(/\./g, '-');
}

const byPkg = new Map();
for (const n of [...wanted].sort()) {
  const m = messages.get(n);
  if (!byPkg.has(m.pkg)) byPkg.set(m.pkg, []);
  byPkg.get(m.pkg).push(n);
}

const outDir = join(process.cwd(), 'src/api/schema/generated');
if (existsSync(outDir)) rmSync(outDir, { recursive: true });
mkdirSync(outDir, { recursive: true });
const header = (what) => `// GENERATED by scripts/gen-schema.mjs from ${kubectl.split('/').pop()} (descriptors and Go type facts). Do not edit:\n// change the generator or src/api/schema/patch-metadata.ts and re-run it.\n// ${what}\n`;
const stems = [];
let fieldCount = 0;
for (const [pkg, names] of [...byPkg].sort()) {
  const stem = fileStem(pkg);
  stems.push({ stem, pkg, count: names.length });
  const lines = [header(`Messages of ${pkg}.`), `import type { MessageDecl } from '../types.js';`, '', 'export const messages: readonly MessageDecl[] = ['];
  for (const n of names) {
    const m = messages.get(n);
    const goStruct = goTypes.get(`${m.goPkg}.${m.desc.name}`);
    if (!goStruct) warnings.push(`${n}: no Go type`);
    else if (goStruct.kind === 'slice') listWrappers.add(n);
    const fields = m.desc.field.map((f) => fieldDecl(m, f, goStruct));
    fieldCount += fields.length;
    lines.push(`  { name: '${n}', fields: [`);
    for (const f of fields) lines.push(`    ${render(f)},`);
    lines.push('  ] },');
  }
  lines.push('];', '');
  writeFileSync(join(outDir, `${stem}.ts`), lines.join('\n'));
}

const idx = [header('Index of the generated declarations.'), `import type { MessageDecl } from '../types.js';`];
for (const s of stems) idx.push(`import { messages as ${camel(s.stem)} } from './${s.stem}.js';`);
idx.push('', '/** Every generated message declaration, by package. */', 'export const generatedPackages: Readonly<Record<string, readonly MessageDecl[]>> = {');
for (const s of stems) idx.push(`  '${s.pkg}': ${camel(s.stem)},`);
idx.push('};', '', '/** Messages whose JSON form is a plain array of their single repeated `items` field. */',
  `export const listWrapperMessages: readonly string[] = ${JSON.stringify([...listWrappers].sort(), null, 2).replace(/"/g, "'")};`, '');
writeFileSync(join(outDir, 'index.ts'), idx.join('\n'));

function camel(stem) { return stem.replace(/[-.](\w)/g, (_, c) => c.toUpperCase()); }

for (const w of warnings) console.error(`note: ${w}`);
console.log(`gen-schema: ${wanted.size} messages, ${fieldCount} fields in ${stems.length} files from ${kubectl}`);
