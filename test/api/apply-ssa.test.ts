import t, { type Test } from 'tap';
import { isApiError } from '../../src/api/meta/status.js';
import type { KubeObject } from '../../src/api/resources/types.js';
import { LAST_APPLIED_ANNOTATION, serverSideApply, type ApplyOptions } from '../../src/api/patch/apply.js';
import { updateManagedFields, type ManagedFieldsEntry } from '../../src/api/patch/managed-fields.js';
import type { FieldDecl, MessageDecl, SchemaRegistry } from '../../src/api/schema/types.js';

// A small hand-written schema shaped like apps/v1 Deployment (names are made up).
const s = (name: string, extra: Partial<FieldDecl> = {}): FieldDecl => ({ name, number: 1, type: { scalar: 'string' }, ...extra });
const m = (name: string, message: string, extra: Partial<FieldDecl> = {}): FieldDecl => ({ name, number: 1, type: { message }, ...extra });
const decls: MessageDecl[] = [
  { name: 't.Deployment', fields: [m('metadata', 't.ObjectMeta'), m('spec', 't.DeploymentSpec'), m('status', 't.Status')] },
  { name: 't.Status', fields: [{ name: 'replicas', number: 1, type: { scalar: 'int32' } }] },
  { name: 't.ObjectMeta', fields: [
    s('name'), s('namespace'), s('uid'), s('resourceVersion'), s('labels', { map: true }), s('annotations', { map: true }),
    s('finalizers', { repeated: true, patchStrategy: 'merge' }),
    m('managedFields', 't.ManagedFieldsEntry', { repeated: true }),
  ] },
  { name: 't.ManagedFieldsEntry', fields: [s('manager')] },
  { name: 't.DeploymentSpec', fields: [
    { name: 'replicas', number: 1, type: { scalar: 'int32' }, optional: true },
    m('selector', 't.LabelSelector', { optional: true }),
    m('template', 't.PodTemplateSpec'),
  ] },
  { name: 't.LabelSelector', structType: 'atomic', fields: [s('matchLabels', { map: true })] },
  { name: 't.PodTemplateSpec', fields: [m('metadata', 't.ObjectMeta'), m('spec', 't.PodSpec')] },
  { name: 't.PodSpec', fields: [
    m('containers', 't.Container', { repeated: true, patchStrategy: 'merge', patchMergeKey: 'name', listType: 'map', listMapKeys: ['name'] }),
    m('tolerations', 't.Toleration', { repeated: true, listType: 'atomic' }),
  ] },
  { name: 't.Toleration', fields: [s('key')] },
  { name: 't.Container', fields: [
    s('name'), s('image'), s('args', { repeated: true, listType: 'atomic' }),
    m('env', 't.EnvVar', { repeated: true, patchStrategy: 'merge', patchMergeKey: 'name' }),
    m('ports', 't.ContainerPort', { repeated: true, patchStrategy: 'merge', patchMergeKey: 'containerPort', listType: 'map', listMapKeys: ['containerPort', 'protocol'] }),
  ] },
  { name: 't.EnvVar', fields: [s('name'), s('value')] },
  { name: 't.ContainerPort', fields: [{ name: 'containerPort', number: 1, type: { scalar: 'int32' } }, s('protocol')] },
];
const byName = new Map(decls.map((d) => [d.name, d]));
const reg: SchemaRegistry = { message: (n) => byName.get(n), forKind: () => undefined, all: () => decls };
const msg = byName.get('t.Deployment')!;

const T0 = '2026-01-01T00:00:00Z', T1 = '2026-01-01T00:01:00Z', T2 = '2026-01-01T00:02:00Z';
const opts = (o: Partial<ApplyOptions> = {}): ApplyOptions => ({ manager: 'kubectl', force: false, apiVersion: 'apps/v1', now: T1, resetFields: [['status']], ...o });

function config(image = 'nginx:1.25', replicas = 2): Record<string, any> {
  return {
    apiVersion: 'apps/v1', kind: 'Deployment',
    metadata: { name: 'web', labels: { app: 'web' } },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'web' } },
      template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image, ports: [{ containerPort: 80 }] }] } },
    },
  };
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) { Object.freeze(v); for (const x of Object.values(v)) deepFreeze(x); }
  return v;
}

const apply = (live: KubeObject | undefined, cfg: unknown, o?: Partial<ApplyOptions>) =>
  serverSideApply(live && deepFreeze(live), deepFreeze(cfg), msg, reg, opts(o));

const entries = (obj: KubeObject): ManagedFieldsEntry[] => (obj.metadata?.managedFields ?? []) as ManagedFieldsEntry[];
const entry = (obj: KubeObject, manager: string): ManagedFieldsEntry | undefined => entries(obj).find((e) => e.manager === manager);

function conflict(t: Test, fn: () => unknown, message: string | RegExp, fields?: string[]): void {
  try { fn(); t.fail('expected a conflict'); } catch (e) {
    t.ok(isApiError(e, 'Conflict'), 'Conflict ApiError');
    if (!isApiError(e)) return;
    t.equal(e.code, 409);
    if (typeof message === 'string') t.equal(e.message, message); else t.match(e.message, message);
    if (fields) {
      t.same(e.status.details?.causes?.map((c) => c.field), fields);
      t.ok(e.status.details?.causes?.every((c) => c.reason === 'FieldManagerConflict'));
    }
  }
}

t.test('create on apply', async (t) => {
  const r = apply(undefined, config());
  t.equal(r.created, true);
  t.equal(r.changed, true);
  t.equal(r.object.spec && (r.object.spec as any).replicas, 2);
  const es = entries(r.object);
  t.equal(es.length, 1);
  t.same(es[0], {
    manager: 'kubectl', operation: 'Apply', apiVersion: 'apps/v1', time: T1, fieldsType: 'FieldsV1',
    fieldsV1: {
      'f:metadata': { 'f:labels': { 'f:app': {} } },
      'f:spec': {
        'f:replicas': {},
        'f:selector': {},
        'f:template': {
          'f:metadata': { 'f:labels': { 'f:app': {} } },
          'f:spec': { 'f:containers': { 'k:{"name":"c"}': {
            '.': {}, 'f:image': {}, 'f:name': {},
            'f:ports': { 'k:{"containerPort":80,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {} } },
          } } },
        },
      },
    },
  });
});

t.test('apply twice with a change; a no-op apply changes nothing', async (t) => {
  const first = apply(undefined, config()).object;
  const second = apply(first, config('nginx:1.26'), { now: T2 });
  t.equal(second.created, false);
  t.equal(second.changed, true);
  t.equal((second.object as any).spec.template.spec.containers[0].image, 'nginx:1.26');
  t.equal(entry(second.object, 'kubectl')?.time, T2);
  t.equal(entries(second.object).length, 1);
  const third = apply(second.object, config('nginx:1.26'), { now: '2026-01-01T00:03:00Z' });
  t.equal(third.changed, false);
  t.equal(entry(third.object, 'kubectl')?.time, T2, 'time kept when nothing changed');
});

t.test('fields dropped from the configuration are removed unless someone else owns them', async (t) => {
  const cfg = config();
  cfg.metadata.labels.tier = 'front';
  cfg.spec.template.spec.containers.push({ name: 'side', image: 'busybox' });
  const live = apply(undefined, cfg).object;
  // Another manager also sets the tier label (same value: no conflict).
  const other = apply(live, { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', labels: { tier: 'front' } } }, { manager: 'other' }).object;
  const r = apply(other, config()).object as any;
  t.same(r.metadata.labels, { app: 'web', tier: 'front' }, 'tier kept: still owned by "other"');
  t.same(r.spec.template.spec.containers.map((c: any) => c.name), ['c'], 'the side container is gone');
  const r2 = apply(live, config()).object as any;
  t.same(r2.metadata.labels, { app: 'web' }, 'without a co-owner the label is removed');
  const bare = config();
  delete bare.metadata.labels;
  const r3 = apply(live, bare).object as any;
  t.notOk('labels' in r3.metadata, 'a map emptied by pruning goes away');
});

t.test('a dropped list item stays, with its key, while another manager owns part of it', async (t) => {
  const cfg = config();
  cfg.spec.template.spec.containers.push({ name: 'side', image: 'busybox' });
  const live = apply(undefined, cfg).object;
  // An Update by another manager that only adds args to the side container.
  const edited = JSON.parse(JSON.stringify(live));
  edited.spec.template.spec.containers[1].args = ['-v'];
  const other = updateManagedFields(live, edited, 'tuner', 'Update', 'apps/v1', T2, { msg, reg, resetFields: [['status']] });
  t.same(entry(other, 'tuner')!.fieldsV1, { 'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"side"}': { 'f:args': {} } } } } } });
  const r = apply(other, config()).object as any;
  t.same(r.spec.template.spec.containers, [
    { name: 'c', image: 'nginx:1.25', ports: [{ containerPort: 80 }] },
    { name: 'side', args: ['-v'] },
  ], 'image dropped, name (the key) and the co-owned args kept');
});

t.test('kubectl scale then re-apply: conflict unless forced', async (t) => {
  const live = apply(undefined, config()).object;
  const scaled = JSON.parse(JSON.stringify(live));
  scaled.spec.replicas = 5;
  const afterScale = updateManagedFields(live, scaled, 'kubectl-scale', 'Update', 'apps/v1', T2, { msg, reg, subresource: 'scale', resetFields: [['status']] });
  t.same(entry(afterScale, 'kubectl-scale'), {
    manager: 'kubectl-scale', operation: 'Update', apiVersion: 'apps/v1', time: T2, fieldsType: 'FieldsV1',
    fieldsV1: { 'f:spec': { 'f:replicas': {} } }, subresource: 'scale',
  });
  t.notOk(JSON.stringify(entry(afterScale, 'kubectl')?.fieldsV1).includes('f:replicas'), 'the applier lost replicas');
  conflict(t, () => apply(afterScale, config()),
    'Apply failed with 1 conflict: conflict with "kubectl-scale with subresource \\"scale\\"" using apps/v1: .spec.replicas', ['.spec.replicas']);
  const same = apply(afterScale, config('nginx:1.25', 5));
  t.equal((same.object as any).spec.replicas, 5, 'applying the same value is no conflict');
  t.ok(entry(same.object, 'kubectl-scale'), 'and ownership is shared');
  const forced = apply(afterScale, config(), { force: true });
  t.equal(forced.changed, true);
  t.equal((forced.object as any).spec.replicas, 2);
  const sameForced = apply(afterScale, config('nginx:1.25', 5), { force: true, now: T2 });
  t.equal((sameForced.object as any).spec.replicas, 5);
  t.equal(entry(forced.object, 'kubectl-scale'), undefined, 'the scaler lost its only field and its entry');
  t.match(JSON.stringify(entry(forced.object, 'kubectl')?.fieldsV1), /f:replicas/);
});

t.test('client-side apply followed by server-side apply', async (t) => {
  const cfg = config();
  const created = updateManagedFields(undefined, { ...cfg, metadata: { ...cfg.metadata, uid: 'u1', resourceVersion: '5' } }, 'kubectl-client-side-apply', 'Update', 'apps/v1', T0, { msg, reg, resetFields: [['status']] });
  const csa = entry(created, 'kubectl-client-side-apply')!;
  t.equal(csa.operation, 'Update');
  t.notOk('f:uid' in ((csa.fieldsV1!['f:metadata'] ?? {}) as object), 'uid is never tracked');
  conflict(t, () => apply(created, config('nginx:1.25', 3), { manager: 'other' }),
    'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas');
  conflict(t, () => apply(created, config('nginx:1.26', 3), { manager: 'other' }),
    'Apply failed with 2 conflicts: conflicts with "kubectl-client-side-apply" using apps/v1:\n- .spec.replicas\n- .spec.template.spec.containers[name="c"].image',
    ['.spec.replicas', '.spec.template.spec.containers[name="c"].image']);
  // With the last-applied annotation matching live, manager "kubectl" may take those fields over.
  const withAnn = JSON.parse(JSON.stringify(created));
  withAnn.metadata.annotations = { [LAST_APPLIED_ANNOTATION]: JSON.stringify(cfg) };
  const cfg2 = config('nginx:1.26');
  const r = apply(withAnn, cfg2);
  t.equal((r.object as any).spec.template.spec.containers[0].image, 'nginx:1.26');
  t.same(JSON.parse((r.object as any).metadata.annotations[LAST_APPLIED_ANNOTATION]), cfg2, 'annotation follows the applied configuration');
  conflict(t, () => apply(withAnn, config('nginx:1.26'), { manager: 'someone-else' }), /conflict with "kubectl-client-side-apply" using apps\/v1/);
});

t.test('an object without managedFields: before-first-apply', async (t) => {
  const legacy = { ...config(), metadata: { name: 'web', labels: { app: 'web' } } };
  conflict(t, () => apply(legacy, config('x')), 'Apply failed with 1 conflict: conflict with "before-first-apply" using apps/v1: .spec.template.spec.containers[name="c"].image');
  const ok = apply(legacy, config());
  t.same(entries(ok.object).map((e) => e.manager).sort(), ['before-first-apply', 'kubectl']);
  t.equal(ok.changed, true, 'same values, but managedFields appeared');
});

t.test('lists: live-only items kept, atomic lists replaced, sets merged', async (t) => {
  const live = apply(undefined, config()).object;
  const withSide = apply(live, { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', finalizers: ['x/a'] },
    spec: { template: { spec: { containers: [{ name: 'injected', image: 'proxy' }] } } } }, { manager: 'injector' }).object as any;
  t.same(withSide.spec.template.spec.containers.map((c: any) => c.name), ['c', 'injected']);
  const cfg = config('nginx:1.26');
  cfg.metadata.finalizers = ['x/b'];
  cfg.spec.template.spec.tolerations = [{ key: 'k' }];
  const r = apply(withSide, cfg).object as any;
  t.same(r.spec.template.spec.containers.map((c: any) => c.name), ['c', 'injected'], 'the injected container survives');
  t.same(r.metadata.finalizers, ['x/a', 'x/b']);
  t.match(JSON.stringify(entry(r, 'kubectl')?.fieldsV1), /"f:finalizers":\{"v:\\"x\/b\\"":\{\}\}/);
  t.match(JSON.stringify(entry(r, 'kubectl')?.fieldsV1), /"f:tolerations":\{\}/, 'an atomic list is one field');
  const cfg3 = config('nginx:1.26');
  cfg3.spec.template.spec.tolerations = [{ key: 'j' }];
  conflict(t, () => apply(r, cfg3, { manager: 'third' }), /\.spec\.template\.spec\.tolerations/);
});

t.test('status is not owned through the main resource', async (t) => {
  const cfg = { ...config(), status: { replicas: 9 } };
  const r = apply(undefined, cfg);
  t.notOk('f:status' in (entry(r.object, 'kubectl')!.fieldsV1 as object));
});

t.test('bad configurations are 400s', async (t) => {
  const bad = (cfg: unknown, re: RegExp, o?: Partial<ApplyOptions>) => {
    try { apply(undefined, cfg, o); t.fail('expected 400'); } catch (e) {
      t.ok(isApiError(e, 'BadRequest'));
      if (isApiError(e)) t.match(e.message, re);
    }
  };
  bad([1], /must be a JSON or YAML object/);
  bad({ ...config(), metadata: { name: 'web', managedFields: [] } }, /metadata.managedFields must be nil/);
  bad({ ...config(), apiVersion: 'apps/v2' }, /Incorrect version specified in apply patch. Specified patch version: apps\/v2, expected: apps\/v1/);
  bad({ ...config(), kind: 'Pod' }, /Incorrect kind/, { kind: 'Deployment' });
  bad({ apiVersion: 'apps/v1' }, /kind must be set/);
  const dup = config();
  dup.spec.template.spec.containers.push({ name: 'c', image: 'again' });
  bad(dup, /duplicate entries for key \[name="c"\]/);
  let deep: Record<string, unknown> = {};
  const root = deep;
  for (let i = 0; i < 100000; i++) { const n = {}; deep['x'] = n; deep = n; }
  try {
    serverSideApply(undefined, { ...config(), extra: root }, msg, reg, opts());
    t.fail('expected 400');
  } catch (e) {
    t.ok(isApiError(e, 'BadRequest'));
    if (isApiError(e)) t.match(e.message, /nested too deeply/);
  }
  const nokey = config();
  nokey.spec.template.spec.containers.push({ image: 'anonymous' });
  bad(nokey, /element 1: associative list with keys has an element that omits key field "name"/);
});
