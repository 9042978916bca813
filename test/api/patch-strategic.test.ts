import t, { type Test } from 'tap';
import { isApiError } from '../../src/api/meta/status.js';
import { strategicMerge } from '../../src/api/patch/strategic-merge.js';
import type { FieldDecl, MessageDecl, SchemaRegistry } from '../../src/api/schema/types.js';

// A small hand-written schema shaped like apps/v1 Deployment (names are made up).
const s = (name: string, extra: Partial<FieldDecl> = {}): FieldDecl => ({ name, number: 1, type: { scalar: 'string' }, ...extra });
const m = (name: string, message: string, extra: Partial<FieldDecl> = {}): FieldDecl => ({ name, number: 1, type: { message }, ...extra });
const decls: MessageDecl[] = [
  { name: 't.Deployment', fields: [m('metadata', 't.ObjectMeta'), m('spec', 't.DeploymentSpec'), m('status', 't.Status')] },
  { name: 't.Status', fields: [m('conditions', 't.Condition', { repeated: true, patchStrategy: 'merge', patchMergeKey: 'type' })] },
  { name: 't.Condition', fields: [s('type'), s('status')] },
  { name: 't.ObjectMeta', fields: [
    s('name'), s('namespace'), s('labels', { map: true }), s('annotations', { map: true }),
    s('finalizers', { repeated: true, patchStrategy: 'merge' }),
    m('ownerReferences', 't.OwnerReference', { repeated: true, patchStrategy: 'merge', patchMergeKey: 'uid' }),
  ] },
  { name: 't.OwnerReference', fields: [s('uid'), s('name'), s('kind')] },
  { name: 't.DeploymentSpec', fields: [
    { name: 'replicas', number: 1, type: { scalar: 'int32' }, optional: true },
    m('template', 't.PodTemplateSpec'), m('strategy', 't.Strategy', { patchStrategy: 'retainKeys' }),
  ] },
  { name: 't.Strategy', fields: [s('type'), m('rollingUpdate', 't.RollingUpdate', { optional: true })] },
  { name: 't.RollingUpdate', fields: [m('maxSurge', 'k8s.io.apimachinery.pkg.util.intstr.IntOrString')] },
  { name: 't.PodTemplateSpec', fields: [m('metadata', 't.ObjectMeta'), m('spec', 't.PodSpec')] },
  { name: 't.PodSpec', fields: [
    m('containers', 't.Container', { repeated: true, patchStrategy: 'merge', patchMergeKey: 'name' }),
    m('volumes', 't.Volume', { repeated: true, patchStrategy: 'merge,retainKeys', patchMergeKey: 'name' }),
    m('tolerations', 't.Toleration', { repeated: true }),
    s('nodeSelector', { map: true }),
  ] },
  { name: 't.Toleration', fields: [s('key'), s('operator')] },
  { name: 't.Container', fields: [
    s('name'), s('image'), s('args', { repeated: true }),
    m('env', 't.EnvVar', { repeated: true, patchStrategy: 'merge', patchMergeKey: 'name' }),
    m('ports', 't.ContainerPort', { repeated: true, patchStrategy: 'merge', patchMergeKey: 'containerPort' }),
  ] },
  { name: 't.EnvVar', fields: [s('name'), s('value')] },
  { name: 't.ContainerPort', fields: [{ name: 'containerPort', number: 1, type: { scalar: 'int32' } }, s('protocol')] },
  { name: 't.Volume', fields: [s('name'), m('volumeSource', 't.VolumeSource', { inline: true })] },
  { name: 't.VolumeSource', fields: [m('emptyDir', 't.EmptyDir', { optional: true }), m('configMap', 't.ConfigMapSource', { optional: true })] },
  { name: 't.EmptyDir', fields: [s('medium')] },
  { name: 't.ConfigMapSource', fields: [s('name')] },
];
const byName = new Map(decls.map((d) => [d.name, d]));
const reg: SchemaRegistry = { message: (n) => byName.get(n), forKind: () => undefined, all: () => decls };
const deploy = byName.get('t.Deployment')!;

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) { Object.freeze(v); for (const x of Object.values(v)) deepFreeze(x); }
  return v;
}

function hasDirective(v: unknown): boolean {
  if (Array.isArray(v)) return v.some(hasDirective);
  if (typeof v === 'object' && v !== null) return Object.entries(v).some(([k, x]) => k.startsWith('$') || hasDirective(x));
  return false;
}

const smp = (orig: unknown, patch: unknown): Record<string, any> => {
  const out = strategicMerge(deepFreeze(orig), deepFreeze(patch), deploy, reg) as Record<string, any>;
  if (hasDirective(out)) throw new Error('a directive leaked into the result: ' + JSON.stringify(out));
  return out;
};

function bad(t: Test, fn: () => unknown, msg: RegExp): void {
  try { fn(); t.fail('expected a 400'); } catch (e) {
    t.ok(isApiError(e, 'BadRequest'), 'BadRequest');
    if (isApiError(e)) t.match(e.message, msg);
  }
}

const live = () => ({
  apiVersion: 'apps/v1', kind: 'Deployment',
  metadata: { name: 'web', labels: { app: 'web' }, finalizers: ['a', 'b'] },
  spec: {
    replicas: 1,
    strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%' } },
    template: {
      metadata: { labels: { app: 'web' } },
      spec: {
        containers: [
          { name: 'c', image: 'nginx:1.25', args: ['-a'], env: [{ name: 'A', value: '1' }, { name: 'B', value: '2' }], ports: [{ containerPort: 80, protocol: 'TCP' }] },
        ],
        volumes: [{ name: 'v', emptyDir: {} }],
        tolerations: [{ key: 'x', operator: 'Exists' }],
      },
    },
  },
});

t.test('the exact body kubectl apply sends for a changed image and replicas', async (t) => {
  const lastApplied = '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":2}}';
  const patch = JSON.parse(`{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":${JSON.stringify(lastApplied)}}},"spec":{"replicas":2,"template":{"spec":{"$setElementOrder/containers":[{"name":"c"}],"containers":[{"image":"nginx:1.26","name":"c"}]}}}}`);
  const out = smp(live(), patch);
  t.equal(out.spec.replicas, 2);
  t.equal(out.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'], lastApplied);
  const c = out.spec.template.spec.containers;
  t.equal(c.length, 1);
  t.same(c[0], { name: 'c', image: 'nginx:1.26', args: ['-a'], env: [{ name: 'A', value: '1' }, { name: 'B', value: '2' }], ports: [{ containerPort: 80, protocol: 'TCP' }] });
  t.same(out.metadata.labels, { app: 'web' }, 'untouched parts kept');
});

t.test('kubectl apply removing a container and adding another', async (t) => {
  const base = live();
  base.spec.template.spec.containers.push({ name: 'side', image: 'busybox', args: [], env: [], ports: [] });
  const patch = {
    spec: { template: { spec: {
      '$setElementOrder/containers': [{ name: 'new' }, { name: 'c' }],
      containers: [{ name: 'new', image: 'redis' }, { $patch: 'delete', name: 'side' }],
    } } },
  };
  const out = smp(base, patch);
  t.same(out.spec.template.spec.containers.map((c: { name: string }) => c.name), ['new', 'c']);
  t.equal(out.spec.template.spec.containers[1].image, 'nginx:1.25', 'named in the order but absent from the patch: live value kept');
});

t.test('kubectl apply removing an env var (nested order directive and delete)', async (t) => {
  const patch = JSON.parse('{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"c"}],"containers":[{"$setElementOrder/env":[{"name":"A"}],"env":[{"$patch":"delete","name":"B"}],"name":"c"}]}}}}');
  const out = smp(live(), patch);
  t.same(out.spec.template.spec.containers[0].env, [{ name: 'A', value: '1' }]);
  t.equal(out.spec.template.spec.containers[0].image, 'nginx:1.25');
  const fin = smp(live(), JSON.parse('{"metadata":{"$deleteFromPrimitiveList/finalizers":["a"],"$setElementOrder/finalizers":["b","c"],"finalizers":["c"]}}'));
  t.same(fin.metadata.finalizers, ['b', 'c']);
});

t.test('$setElementOrder with live-only elements', async (t) => {
  const orig = { spec: { template: { spec: { containers: [{ name: 'a', image: '1' }, { name: 'b', image: '2' }, { name: 'c', image: '3' }] } } } };
  const out = smp(orig, { spec: { template: { spec: { '$setElementOrder/containers': [{ name: 'c' }, { name: 'a' }], containers: [{ name: 'a', image: 'x' }] } } } });
  // b is not named: it keeps its place in front of the first ordered element that followed it live.
  t.same(out.spec.template.spec.containers, [{ name: 'b', image: '2' }, { name: 'c', image: '3' }, { name: 'a', image: 'x' }]);
  const order = smp(orig, { spec: { template: { spec: { '$setElementOrder/containers': [{ name: 'c' }, { name: 'b' }, { name: 'a' }] } } } });
  t.same(order.spec.template.spec.containers.map((c: { name: string }) => c.name), ['c', 'b', 'a'], 'order alone reorders the live list');
  bad(t, () => smp(orig, { spec: { template: { spec: { '$setElementOrder/containers': [{ image: 'x' }] } } } }), /does not contain declared merge key: name/);
});

t.test('merging by key without $setElementOrder: new patch items first, as Kubernetes orders them', async (t) => {
  const orig = { spec: { template: { spec: { containers: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] } } } };
  const out = smp(orig, { spec: { template: { spec: { containers: [{ name: 'd' }, { name: 'b', image: 'x' }] } } } });
  // Kubernetes slots live-only items in front of a patch item only when both are in the live list.
  t.same(out.spec.template.spec.containers, [{ name: 'd' }, { name: 'a' }, { name: 'b', image: 'x' }, { name: 'c' }]);
  const ports = smp(live(), { spec: { template: { spec: { containers: [{ name: 'c', ports: [{ containerPort: 443 }], env: [{ name: 'B', value: '3' }] }] } } } });
  const c = ports.spec.template.spec.containers[0];
  t.same(c.ports, [{ containerPort: 443 }, { containerPort: 80, protocol: 'TCP' }], 'ports merge by containerPort (new ones first)');
  t.same(c.env, [{ name: 'A', value: '1' }, { name: 'B', value: '3' }], 'env merges by name');
});

t.test('$patch directives', async (t) => {
  const del = smp(live(), { spec: { template: { spec: { containers: [{ name: 'c', env: [{ name: 'A', $patch: 'delete' }] }] } } } });
  t.same(del.spec.template.spec.containers[0].env, [{ name: 'B', value: '2' }]);
  const rep = smp(live(), { spec: { template: { spec: { containers: [{ name: 'c', env: [{ name: 'Z', value: '9' }, { $patch: 'replace' }] }] } } } });
  t.same(rep.spec.template.spec.containers[0].env, [{ name: 'Z', value: '9' }], 'list replace');
  const mapRep = smp(live(), { spec: { strategy: { $patch: 'replace', type: 'Recreate' } } });
  t.same(mapRep.spec.strategy, { type: 'Recreate' }, 'map replace');
  const mapDel = smp(live(), { metadata: { labels: { $patch: 'delete' } } });
  t.same(mapDel.metadata.labels, {}, 'map delete');
  const merge = smp(live(), { metadata: { labels: { $patch: 'merge', tier: 'x' } } });
  t.same(merge.metadata.labels, { app: 'web', tier: 'x' });
  const elMerge = smp(live(), { spec: { template: { spec: { containers: [{ name: 'c', image: 'i', $patch: 'merge' }] } } } });
  t.equal(elMerge.spec.template.spec.containers[0].image, 'i');
  bad(t, () => smp(live(), { metadata: { labels: { $patch: 'explode' } } }), /unknown patch type: "explode" in map/);
  bad(t, () => smp(live(), { spec: { template: { spec: { containers: [{ $patch: 'delete' }] } } } }), /does not contain declared merge key: name/);
  bad(t, () => smp(live(), { spec: { template: { spec: { containers: [{ image: 'x' }] } } } }), /does not contain declared merge key: name/);
});

t.test('$retainKeys clears the keys not listed', async (t) => {
  const out = smp(live(), { spec: { strategy: { $retainKeys: ['type'], type: 'Recreate', rollingUpdate: null } } });
  t.same(out.spec.strategy, { type: 'Recreate' });
  const vol = smp(live(), { spec: { template: { spec: {
    '$setElementOrder/volumes': [{ name: 'v' }],
    volumes: [{ $retainKeys: ['configMap', 'name'], name: 'v', configMap: { name: 'cm' } }],
  } } } });
  t.same(vol.spec.template.spec.volumes, [{ name: 'v', configMap: { name: 'cm' } }], 'inline volume source members, emptyDir dropped');
  bad(t, () => smp(live(), { spec: { strategy: { $retainKeys: ['type'], rollingUpdate: { maxSurge: 1 } } } }), /invalid patch format of retainKeys/);
  bad(t, () => smp(live(), { spec: { strategy: { $retainKeys: 'type' } } }), /invalid patch format of retainKeys/);
});

t.test('primitive lists: union for merge strategy, replace otherwise', async (t) => {
  const fin = smp(live(), { metadata: { finalizers: ['c', 'a'] } });
  t.same(fin.metadata.finalizers, ['c', 'a', 'b'], 'union: patch items in patch order, then live-only ones');
  const del = smp(live(), { metadata: { '$deleteFromPrimitiveList/finalizers': ['a'], finalizers: ['z'] } });
  t.same(del.metadata.finalizers, ['z', 'b']);
  const ord = smp(live(), { metadata: { '$setElementOrder/finalizers': ['b', 'a'] } });
  t.same(ord.metadata.finalizers, ['b', 'a']);
  const args = smp(live(), { spec: { template: { spec: { containers: [{ name: 'c', args: ['-b'] }] } } } });
  t.same(args.spec.template.spec.containers[0].args, ['-b'], 'args are replaced');
  const tol = smp(live(), { spec: { template: { spec: { tolerations: [{ key: 'y' }] } } } });
  t.same(tol.spec.template.spec.tolerations, [{ key: 'y' }], 'lists of objects without merge strategy are replaced');
});

t.test('null deletes; unknown fields behave like merge patch', async (t) => {
  const out = smp(live(), { spec: { replicas: null, template: { spec: { nodeSelector: { disk: 'ssd' } } } }, extra: { a: [1, 2], m: { x: 1 } } });
  t.notOk('replicas' in out.spec);
  t.same(out.spec.template.spec.nodeSelector, { disk: 'ssd' });
  const again = smp(out, { extra: { a: [3], m: { y: 2, x: null } } });
  t.same(again.extra, { a: [3], m: { y: 2 } });
  const ownerRefs = smp({ metadata: { ownerReferences: [{ uid: '1', name: 'a' }] } }, { metadata: { ownerReferences: [{ uid: '2', name: 'b' }] } });
  t.same(ownerRefs.metadata.ownerReferences, [{ uid: '2', name: 'b' }, { uid: '1', name: 'a' }]);
});

t.test('directives inside new content are processed and stripped', async (t) => {
  const out = smp({}, {
    spec: { template: { spec: {
      '$setElementOrder/containers': [{ name: 'x' }],
      containers: [{ name: 'x', '$setElementOrder/env': [{ name: 'E' }], env: [{ name: 'E', value: 'v' }, { name: 'F', $patch: 'delete' }] }],
    } } },
    metadata: { labels: { $patch: 'replace', a: '1' }, '$deleteFromPrimitiveList/finalizers': ['q'] },
  });
  t.same(out, { spec: { template: { spec: { containers: [{ name: 'x', env: [{ name: 'E', value: 'v' }] }] } } }, metadata: { labels: { a: '1' } } });
  const unknown = smp({}, { $weird: 1, spec: { $other: { a: 1 } } });
  t.same(unknown, { spec: {} }, 'unknown $ keys are dropped too');
});

t.test('status conditions merge by type (kubelet-style status patch)', async (t) => {
  const orig = { status: { conditions: [{ type: 'Ready', status: 'False' }, { type: 'Scheduled', status: 'True' }] } };
  const out = smp(orig, { status: { '$setElementOrder/conditions': [{ type: 'Ready' }, { type: 'Scheduled' }], conditions: [{ type: 'Ready', status: 'True' }] } });
  t.same(out.status.conditions, [{ type: 'Ready', status: 'True' }, { type: 'Scheduled', status: 'True' }]);
});

t.test('bad input is a 400, never a crash', async (t) => {
  bad(t, () => strategicMerge({}, [1], deploy, reg), /must be a JSON object/);
  bad(t, () => smp(live(), { spec: { template: { spec: { containers: ['x'] } } } }), /list elements must all be objects/);
  bad(t, () => smp(live(), { metadata: { finalizers: [{ a: 1 }] } }), /list elements must all be scalars/);
  bad(t, () => smp(live(), { spec: { template: { spec: { containers: [null] } } } }), /list elements must all be objects/);
  bad(t, () => smp(live(), { metadata: { '$deleteFromPrimitiveList/finalizers': 'a' } }), /must be a list/);
  let deep: Record<string, unknown> = {};
  const root = deep;
  for (let i = 0; i < 100000; i++) { const n = {}; deep['x'] = n; deep = n; }
  bad(t, () => strategicMerge({}, root, undefined, reg), /nested too deeply/);
  t.same(strategicMerge(undefined, { a: 1 }, undefined, reg), { a: 1 }, 'a missing original is an empty object');
});
