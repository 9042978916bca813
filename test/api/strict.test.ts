// Strict field validation: unknown fields, duplicate keys and wrong JSON types by path, and the
// Strict/Warn/Ignore outcomes with Kubernetes' wording.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { checkFields, fieldValidationOutcome, scanJsonKeys } from '../../src/api/codec/strict.js';
import { warningHeaderValue } from '../../src/api/codec/warning-header.js';
import { ApiError } from '../../src/api/meta/status.js';
import { messageForObject, schema } from '../../src/api/schema/registry.js';

function thrown(fn: () => unknown): ApiError | undefined {
  try { fn(); } catch (e) { return e instanceof ApiError ? e : undefined; }
  return undefined;
}

const deployment = schema.forKind('apps', 'v1', 'Deployment')!;
const pod = schema.forKind('', 'v1', 'Pod')!;
const service = schema.forKind('', 'v1', 'Service')!;
const statefulSet = schema.forKind('apps', 'v1', 'StatefulSet')!;

// The body Kubernetes' own field-validation integration test posts.
const invalidDeployment = `{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {
    "name": "dupename",
    "name": "d1",
    "labels": {"app": "nginx"},
    "unknownMeta": "metaVal"
  },
  "spec": {
    "unknown1": "val1",
    "unknownDupe": "valDupe",
    "unknownDupe": "valDupe2",
    "paused": true,
    "paused": false,
    "selector": {"matchLabels": {"app": "nginx"}},
    "template": {
      "metadata": {"labels": {"app": "nginx"}},
      "spec": {
        "containers": [{
          "name": "nginx",
          "image": "nginx:latest",
          "unknownNested": "val1",
          "imagePullPolicy": "Always",
          "imagePullPolicy": "Never"
        }]
      }
    }
  }
}`;
const expectedMessages = [
  'duplicate field "metadata.name"',
  'unknown field "metadata.unknownMeta"',
  'unknown field "spec.unknown1"',
  'unknown field "spec.unknownDupe"',
  'duplicate field "spec.paused"',
  'unknown field "spec.template.spec.containers[0].unknownNested"',
  'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
];

t.test('unknown and duplicate fields in document order, as Kubernetes reports them', async (t) => {
  const r = checkFields(JSON.parse(invalidDeployment), deployment, schema, { rawJson: Buffer.from(invalidDeployment) });
  t.same(r.unknown.sort(), ['metadata.unknownMeta', 'spec.template.spec.containers[0].unknownNested', 'spec.unknown1', 'spec.unknownDupe'].sort());
  t.same(r.duplicate, ['metadata.name', 'spec.paused', 'spec.template.spec.containers[0].imagePullPolicy']);
  t.same(r.typeErrors, []);
  t.same(r.messages, expectedMessages);
});

t.test('Strict, Warn and Ignore', async (t) => {
  const r = checkFields(JSON.parse(invalidDeployment), deployment, schema, { rawJson: invalidDeployment });
  const what = { kind: 'Deployment', version: 'v1' };
  const err = thrown(() => fieldValidationOutcome('Strict', r, what));
  t.equal(err?.code, 400);
  t.equal(err?.reason, 'BadRequest');
  t.equal(err?.message, `Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: ${expectedMessages.join(', ')}`);
  t.same(fieldValidationOutcome('Warn', r, what).warnings, expectedMessages);
  t.same(fieldValidationOutcome('Ignore', r, what).warnings, []);
  t.equal(warningHeaderValue('unknown field "spec.foo"'), '299 - "unknown field \\"spec.foo\\""');
  const clean = checkFields({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x' }, spec: { replicas: 1 } }, deployment, schema, {});
  t.same(fieldValidationOutcome('Strict', clean, what).warnings, []);
});

t.test('known shapes are accepted: inline members, metadata, special types, embedded objects', async (t) => {
  const p = {
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name: 'p', namespace: 'default', labels: { a: 'b' }, annotations: { x: 'y' }, creationTimestamp: null,
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'u', controller: true }],
      managedFields: [{ manager: 'kubectl', operation: 'Apply', apiVersion: 'v1', time: '2026-01-01T00:00:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:labels': {} } } }],
    },
    spec: {
      containers: [{
        name: 'c', image: 'i', ports: [{ containerPort: 80, protocol: 'TCP' }],
        resources: { limits: { cpu: '100m', memory: 1073741824 }, requests: { cpu: 0.5 } },
        livenessProbe: { httpGet: { path: '/', port: 'http' }, initialDelaySeconds: 3 },
        readinessProbe: { tcpSocket: { port: 8080 } },
      }],
      // Volume.volumeSource is inline: its members sit directly in the volume.
      volumes: [{ name: 'v', emptyDir: { sizeLimit: '1Gi' } }, { name: 'cm', configMap: { name: 'c', defaultMode: 420 } }],
      activeDeadlineSeconds: 30,
    },
    status: { phase: 'Pending', startTime: '2026-01-01T00:00:00Z' },
  };
  const r = checkFields(p, pod, schema, { rawJson: JSON.stringify(p) });
  t.same(r, { unknown: [], duplicate: [], typeErrors: [], messages: [] });
  const svc = { apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec: { ports: [{ port: 80, targetPort: 8080 }, { port: 81, targetPort: 'web' }] } };
  t.same(checkFields(svc, service, schema, {}).typeErrors, []);
  // A PersistentVolumeClaim template inside a StatefulSet carries its own apiVersion and kind.
  const sts = { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 's' }, spec: { volumeClaimTemplates: [{ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'd' }, spec: { resources: { requests: { storage: '1Gi' } } } }], bogus: 1 } };
  t.same(checkFields(sts, statefulSet, schema, {}).unknown, ['spec.bogus']);
});

t.test('wrong JSON types carry the field path', async (t) => {
  const d = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 7, labels: ['x'] }, spec: { replicas: '3', paused: 'yes', minReadySeconds: 1.5, template: { spec: { containers: { name: 'c' } } } } };
  const r = checkFields(d, deployment, schema, {});
  t.same(r.typeErrors.map((e) => e.field).sort(), ['metadata.labels', 'metadata.name', 'spec.minReadySeconds', 'spec.paused', 'spec.replicas', 'spec.template.spec.containers'].sort());
  const replicas = r.typeErrors.find((e) => e.field === 'spec.replicas')!;
  t.equal(replicas.message, 'json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32');
  t.equal(r.typeErrors.find((e) => e.field === 'spec.minReadySeconds')!.message, 'json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.minReadySeconds of type int32');
  t.equal(r.typeErrors.find((e) => e.field === 'spec.template.spec.containers')!.message, 'json: cannot unmarshal object into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container');
  // Type errors fail in every mode, as a decode error.
  for (const mode of ['Strict', 'Warn', 'Ignore'] as const) {
    const e = thrown(() => fieldValidationOutcome(mode, r, { kind: 'Deployment', version: 'v1' }));
    t.equal(e?.code, 400, mode);
    t.match(e?.message, /^Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal/);
    t.ok((e?.status.details?.causes ?? []).some((c) => c.field === 'spec.replicas'));
  }
  const bad = checkFields({ spec: { containers: [{ name: 'c', resources: { limits: { cpu: true } } }] } }, pod, schema, {});
  t.same(bad.typeErrors.map((e) => e.field), ['spec.containers[0].resources.limits.cpu']);
});

t.test('raw JSON key scan', async (t) => {
  const raw = '{"a":{"b":1,"b":2,"c":[{"d":"x\\"}","d":null}]},"a":3,"e":"{\\"f\\":1,\\"f\\":2}"}';
  t.same(scanJsonKeys(raw).duplicates.map((d) => d.path), ['a.b', 'a.c[0].d', 'a']);
  t.same(scanJsonKeys('{"x":[1,[2,3],{"y":1}],"z":{"y":1,"y":[]}}').duplicates.map((d) => d.path), ['z.y']);
  // Duplicates are only looked for in JSON bodies.
  t.same(checkFields({ metadata: { name: 'a' } }, pod, schema, { rawJson: 'metadata:\n  name: a\n  name: b\n' }).duplicate, []);
});

const fixtureDir = [join(process.cwd(), '..', 'shared', 'k8s-testdata', 'HEAD'), '/work/shared/k8s-testdata/HEAD'].find((d) => existsSync(d));
t.test('Kubernetes HEAD fixtures of served kinds pass without findings', { skip: fixtureDir ? false : 'no k8s-testdata/HEAD' }, async (t) => {
  let checked = 0;
  for (const f of readdirSync(fixtureDir!).filter((x) => x.endsWith('.json')).sort()) {
    const raw = readFileSync(join(fixtureDir!, f), 'utf8');
    const o = JSON.parse(raw) as { apiVersion?: string; kind?: string };
    const msg = messageForObject(o.apiVersion ?? '', o.kind ?? '');
    if (!msg) continue;
    checked++;
    const r = checkFields(o, msg, schema, { rawJson: raw });
    t.same({ unknown: r.unknown, duplicate: r.duplicate, typeErrors: r.typeErrors }, { unknown: [], duplicate: [], typeErrors: [] }, f);
  }
  t.ok(checked > 30, `${checked} fixtures checked`);
});
