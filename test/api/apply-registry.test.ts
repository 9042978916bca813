// Server-side apply and managedFields against the real schema registry (Deployment and Pod).
import t from 'tap';
import { isApiError } from '../../src/api/meta/status.js';
import type { KubeObject } from '../../src/api/resources/types.js';
import { serverSideApply } from '../../src/api/patch/apply.js';
import { updateManagedFields, type ManagedFieldsEntry } from '../../src/api/patch/managed-fields.js';
import { schema } from '../../src/api/schema/registry.js';

const deployment = schema.forKind('apps', 'v1', 'Deployment')!;
const pod = schema.forKind('', 'v1', 'Pod')!;
const T1 = '2026-01-01T00:01:00Z', T2 = '2026-01-01T00:02:00Z';

const entries = (o: KubeObject): ManagedFieldsEntry[] => (o.metadata?.managedFields ?? []) as ManagedFieldsEntry[];

const deployConfig = (image: string, replicas: number) => ({
  apiVersion: 'apps/v1', kind: 'Deployment',
  metadata: { name: 'web', namespace: 'default' },
  spec: {
    replicas,
    selector: { matchLabels: { app: 'web' } },
    template: {
      metadata: { labels: { app: 'web' } },
      spec: { containers: [{ name: 'nginx', image, ports: [{ containerPort: 80 }] }] },
    },
  },
});

t.test('Deployment: apply --server-side, kubectl scale, re-apply', async (t) => {
  const opts = { manager: 'kubectl', force: false, apiVersion: 'apps/v1', kind: 'Deployment', now: T1, resetFields: [['status']] };
  const created = serverSideApply(undefined, deployConfig('nginx:1.25', 2), deployment, schema, opts);
  t.ok(created.created);
  const fv1 = entries(created.object)[0]!.fieldsV1 as any;
  t.same(fv1['f:spec']['f:template']['f:spec']['f:containers'], {
    'k:{"name":"nginx"}': { '.': {}, 'f:image': {}, 'f:name': {}, 'f:ports': { 'k:{"containerPort":80,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {} } } },
  });
  t.ok(fv1['f:spec']['f:replicas'], 'replicas owned');

  // The REST layer stores it with metadata and defaults; the controller writes status.
  const stored = JSON.parse(JSON.stringify(created.object));
  Object.assign(stored.metadata, { uid: 'u1', resourceVersion: '10', generation: 1, creationTimestamp: '2026-01-01T00:01:00Z' });
  stored.spec.template.spec.containers[0].ports[0].protocol = 'TCP';
  const withStatus = JSON.parse(JSON.stringify(stored));
  withStatus.status = { observedGeneration: 1, replicas: 2, conditions: [{ type: 'Available', status: 'True' }] };
  const afterController = updateManagedFields(stored, withStatus, 'kube-controller-manager', 'Update', 'apps/v1', T1,
    { msg: deployment, reg: schema, subresource: 'status', resetFields: [['spec'], ['metadata']] });
  const cm = entries(afterController).find((e) => e.manager === 'kube-controller-manager')!;
  t.equal(cm.subresource, 'status');
  t.same(Object.keys(cm.fieldsV1!), ['f:status']);
  t.same((cm.fieldsV1 as any)['f:status']['f:conditions'], { '.': {}, 'k:{"type":"Available"}': { '.': {}, 'f:status': {}, 'f:type': {} } });

  // kubectl scale deploy/web --replicas=3 (merge patch on /scale, tracked on the deployment).
  const scaled = JSON.parse(JSON.stringify(afterController));
  scaled.spec.replicas = 3;
  const afterScale = updateManagedFields(afterController, scaled, 'kubectl', 'Update', 'apps/v1', T2, { msg: deployment, reg: schema, subresource: 'scale', resetFields: [['status']] });

  // Re-apply with the old replicas and a new image: conflict on replicas only.
  try {
    serverSideApply(afterScale, deployConfig('nginx:1.26', 2), deployment, schema, { ...opts, now: T2 });
    t.fail('expected a conflict');
  } catch (e) {
    t.ok(isApiError(e, 'Conflict'));
    if (isApiError(e)) {
      t.equal(e.message, 'Apply failed with 1 conflict: conflict with "kubectl with subresource \\"scale\\"" using apps/v1: .spec.replicas');
      t.same(e.status.details?.causes, [{ reason: 'FieldManagerConflict', message: 'conflict with "kubectl with subresource \\"scale\\"" using apps/v1', field: '.spec.replicas' }]);
    }
  }
  // Dropping replicas from the configuration avoids the conflict and leaves replicas alone.
  const cfg = deployConfig('nginx:1.26', 0) as any;
  delete cfg.spec.replicas;
  const reapplied = serverSideApply(afterScale, cfg, deployment, schema, { ...opts, now: T2 });
  const obj = reapplied.object as any;
  t.equal(obj.spec.replicas, 3, 'the scaled value stays (owned by the scaler)');
  t.equal(obj.spec.template.spec.containers[0].image, 'nginx:1.26');
  t.same(obj.status.conditions, [{ type: 'Available', status: 'True' }], 'status untouched');
  t.equal(obj.metadata.uid, 'u1', 'metadata kept');
  t.same(entries(reapplied.object).map((e) => `${e.manager}/${e.operation}/${e.subresource ?? ''}`).sort(),
    ['kube-controller-manager/Update/status', 'kubectl/Apply/', 'kubectl/Update/scale']);
  // Forcing takes replicas back.
  const forced = serverSideApply(afterScale, deployConfig('nginx:1.26', 2), deployment, schema, { ...opts, force: true, now: T2 });
  t.equal((forced.object as any).spec.replicas, 2);
  t.notOk(entries(forced.object).some((e) => e.subresource === 'scale'));
});

t.test('Pod: apply creates, a second manager adds a container, the applier keeps its own', async (t) => {
  const opts = { manager: 'kubectl', force: false, apiVersion: 'v1', kind: 'Pod', now: T1, resetFields: [['status']] };
  const cfg = {
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', labels: { app: 'p' } },
    spec: {
      containers: [{ name: 'main', image: 'busybox', command: ['sleep', '3600'], env: [{ name: 'A', value: '1' }] }],
      volumes: [{ name: 'v', emptyDir: {} }],
    },
  };
  const one = serverSideApply(undefined, cfg, pod, schema, opts).object;
  const fv = entries(one)[0]!.fieldsV1 as any;
  t.same(fv['f:spec']['f:volumes'], { 'k:{"name":"v"}': { '.': {}, 'f:emptyDir': {}, 'f:name': {} } }, 'inline volume source, empty object owned');
  t.same(fv['f:spec']['f:containers']['k:{"name":"main"}']['f:command'], {}, 'command is atomic');
  const two = serverSideApply(one, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'sidecar', image: 'envoy' }] } },
    pod, schema, { ...opts, manager: 'injector' }).object as any;
  t.same(two.spec.containers.map((c: any) => c.name), ['main', 'sidecar']);
  const cfg2 = JSON.parse(JSON.stringify(cfg));
  cfg2.spec.containers[0].env = [{ name: 'B', value: '2' }];
  const three = serverSideApply(two, cfg2, pod, schema, opts).object as any;
  t.same(three.spec.containers.map((c: any) => c.name), ['main', 'sidecar']);
  t.same(three.spec.containers[0].env, [{ name: 'B', value: '2' }], 'env A dropped by its only owner');
});
