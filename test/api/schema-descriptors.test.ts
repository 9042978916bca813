// Our declarations agree with the protobuf descriptors embedded in every kubectl.1.NN binary on
// the machine: same field numbers, scalar types, message types, repeated and map shapes.
// Fields newer than a binary are allowed to be missing from it. The newest binary must agree
// exactly; older ones only on wire shape, since upstream later dropped a few alpha fields
// (PodResourceClaim.source, NetworkPolicy.status) and renamed a message
// (PersistentVolumeClaimSpec.resources became VolumeResourceRequirements, same wire form).
import t from 'tap';
import protobuf from 'protobufjs';
import { schema } from '../../src/api/schema/registry.js';
import type { FieldDecl } from '../../src/api/schema/types.js';
import { kubectlBinaries, loadKubectlDescriptors } from '../helpers/kubectl-descriptors.js';

const binaries = kubectlBinaries();

function describeOurs(f: FieldDecl): string {
  const type = 'scalar' in f.type ? f.type.scalar : f.type.message;
  return `${f.map ? 'map ' : f.repeated ? 'repeated ' : ''}${type}`;
}

function describeTheirs(f: protobuf.Field): string {
  if (f instanceof protobuf.MapField) {
    const v = f.resolvedType ? f.resolvedType.fullName.slice(1) : f.type;
    return `map ${v}`;
  }
  const type = f.resolvedType ? f.resolvedType.fullName.slice(1) : f.type;
  return `${f.repeated ? 'repeated ' : ''}${type}`;
}

t.test('declarations agree with kubectl descriptors', { skip: binaries.length ? false : 'no kubectl.1.NN on this machine' }, async (t) => {
  const newest = binaries[binaries.length - 1];
  for (const bin of binaries) {
    const { root } = loadKubectlDescriptors(bin);
    const exact = bin === newest;
    const shape = (d: string): string => (exact ? d : d.replace(/k8s\.io\.[\w.]+/, 'message'));
    let messages = 0, fields = 0, newer = 0;
    const mismatches: string[] = [];
    for (const m of schema.all()) {
      let type: protobuf.Type;
      try { type = root.lookupType(m.name); } catch { newer++; continue; }
      messages++;
      for (const f of m.fields) {
        const theirs = type.fieldsById[f.number];
        if (!theirs) { newer++; continue; }
        fields++;
        if (shape(describeOurs(f)) !== shape(describeTheirs(theirs))) mismatches.push(`${m.name}.${f.name}=${f.number}: ours ${describeOurs(f)}, theirs ${describeTheirs(theirs)}`);
      }
      // Every field the newest binary knows must be declared (same number) on our side.
      if (exact) for (const theirs of type.fieldsArray) {
        if (!m.fields.some((f) => f.number === theirs.id)) mismatches.push(`${m.name}: missing field ${theirs.name}=${theirs.id}`);
      }
    }
    t.same(mismatches, [], `${bin.split('/').pop()}: ${messages} messages, ${fields} fields agree (${newer} declarations newer than it)`);
    if (bin.endsWith('.1.33')) t.ok(messages > 400, 'the 1.33 descriptors cover our declarations');
  }
});
