import t from 'tap';
import { fieldOf, gvksOf, isListWrapper, jsonFields, kindMessage, schema } from '../../src/api/schema/registry.js';

t.test('kinds and lookups', async (t) => {
  t.equal(kindMessage('apps', 'v1', 'Deployment')?.name, 'k8s.io.api.apps.v1.Deployment');
  t.equal(kindMessage('', 'v1', 'PodList')?.name, 'k8s.io.api.core.v1.PodList');
  t.equal(kindMessage('', 'v1', 'Status')?.name, 'k8s.io.apimachinery.pkg.apis.meta.v1.Status');
  t.equal(kindMessage('apps', 'v1', 'DeleteOptions')?.name, 'k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions', 'meta kinds in every group version');
  t.equal(kindMessage('meta.k8s.io', 'v1', 'PartialObjectMetadataList')?.name, 'k8s.io.apimachinery.pkg.apis.meta.v1.PartialObjectMetadataList');
  t.equal(kindMessage('meta.k8s.io', 'v1beta1', 'PartialObjectMetadata')?.name, 'k8s.io.apimachinery.pkg.apis.meta.v1.PartialObjectMetadata');
  t.equal(kindMessage('policy', 'v1', 'Eviction')?.name, 'k8s.io.api.policy.v1.Eviction');
  t.equal(kindMessage('example.com', 'v1', 'Widget'), undefined);
  t.same(gvksOf('k8s.io.api.batch.v1.Job'), [{ group: 'batch', version: 'v1', kind: 'Job' }]);
  t.ok(isListWrapper('k8s.io.apimachinery.pkg.apis.meta.v1.Verbs'));
  t.ok([...schema.all()].length > 500);
  t.match(kindMessage('', 'v1', 'Pod')?.description, /containers/);
  t.equal(kindMessage('', 'v1', 'PodList')?.description, 'A list of Pod objects.');
});

t.test('inline members resolve through fieldOf', async (t) => {
  t.equal(fieldOf('k8s.io.api.core.v1.Volume', 'configMap')?.number, 19);
  t.equal(jsonFields('k8s.io.api.core.v1.Volume').get('configMap')?.via[0].name, 'volumeSource');
  t.equal(fieldOf('k8s.io.api.core.v1.Probe', 'httpGet')?.number, 2);
  t.equal(fieldOf('k8s.io.api.core.v1.ConfigMapKeySelector', 'name')?.number, 1);
  t.equal(fieldOf('k8s.io.api.core.v1.PersistentVolumeSpec', 'hostPath')?.number, 3);
  t.equal(fieldOf('k8s.io.api.core.v1.EphemeralContainer', 'image')?.number, 2);
  t.equal(fieldOf('k8s.io.api.core.v1.EphemeralContainer', 'targetContainerName')?.number, 2);
});

t.test('patch strategies, presence and list types', async (t) => {
  const f = (m: string, n: string) => fieldOf(`k8s.io.api.${m}`, n);
  t.match(f('core.v1.PodSpec', 'containers'), { patchStrategy: 'merge', patchMergeKey: 'name', listType: 'map', listMapKeys: ['name'] });
  t.match(f('core.v1.PodSpec', 'volumes'), { patchStrategy: 'merge,retainKeys', patchMergeKey: 'name' });
  t.match(f('core.v1.Container', 'ports'), { patchStrategy: 'merge', patchMergeKey: 'containerPort' });
  t.match(f('core.v1.Container', 'volumeMounts'), { patchStrategy: 'merge', patchMergeKey: 'mountPath' });
  t.match(f('core.v1.ServiceSpec', 'ports'), { patchStrategy: 'merge', patchMergeKey: 'port' });
  t.match(f('core.v1.PodStatus', 'conditions'), { patchStrategy: 'merge', patchMergeKey: 'type' });
  t.match(fieldOf('k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta', 'ownerReferences'), { patchStrategy: 'merge', patchMergeKey: 'uid' });
  t.match(fieldOf('k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta', 'finalizers'), { patchStrategy: 'merge' });
  t.match(f('apps.v1.DeploymentSpec', 'strategy'), { patchStrategy: 'retainKeys' });
  t.equal(f('core.v1.PodSpec', 'tolerations')?.patchStrategy, undefined);
  t.equal(f('apps.v1.DeploymentSpec', 'replicas')?.optional, true);
  t.equal(f('core.v1.PodSpec', 'terminationGracePeriodSeconds')?.optional, true);
  t.equal(f('core.v1.PodSpec', 'hostNetwork')?.optional, undefined);
  t.equal(f('core.v1.Container', 'name')?.required, true);
  t.equal(f('core.v1.ContainerStatus', 'ready')?.emitEmpty, true, 'json:"ready" has no omitempty');
  t.equal(f('core.v1.ContainerStatus', 'started')?.optional, true, '*bool');
  t.equal(f('core.v1.PodSpec', 'hostnameOverride')?.number, 41, 'newer than the kubectl descriptors, from the hand table');
});

t.test('the hand table and the declarations are consistent', async (t) => {
  const { fieldPatches, addedFields } = await import('../../src/api/schema/patch-metadata.js');
  const problems: string[] = [];
  for (const [m, fields] of Object.entries(fieldPatches)) {
    const decl = schema.message(m);
    if (!decl) { problems.push(`patch for unknown message ${m}`); continue; }
    for (const f of Object.keys(fields)) if (!decl.fields.some((x) => x.name === f)) problems.push(`patch for unknown field ${m}.${f}`);
  }
  for (const m of Object.keys(addedFields)) if (!schema.message(m)) problems.push(`added field on unknown message ${m}`);
  for (const m of schema.all()) {
    const numbers = new Set<number>();
    const names = new Set<string>();
    for (const f of m.fields) {
      if ('message' in f.type && !schema.message(f.type.message)) problems.push(`${m.name}.${f.name}: unknown type ${f.type.message}`);
      if (numbers.has(f.number)) problems.push(`${m.name}: field number ${f.number} twice`);
      if (names.has(f.name)) problems.push(`${m.name}: field ${f.name} twice`);
      if (f.patchMergeKey && !('message' in f.type)) problems.push(`${m.name}.${f.name}: merge key on a scalar list`);
      if (f.patchMergeKey && 'message' in f.type && !fieldOf(f.type.message, f.patchMergeKey)) problems.push(`${m.name}.${f.name}: merge key ${f.patchMergeKey} is not a field`);
      numbers.add(f.number);
      names.add(f.name);
    }
  }
  t.same(problems, []);
});
