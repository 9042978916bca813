import t from 'tap';
import { allResources, findByKind, findResource } from '../../src/api/resources/registry.js';
import { pods, podStatusReason } from '../../src/api/resources/core/pods.js';
import { defaultPullPolicy } from '../../src/api/resources/core/pod-spec.js';
import { secrets } from '../../src/api/resources/core/secrets.js';
import { services } from '../../src/api/resources/core/services.js';
import { statefulsets } from '../../src/api/resources/apps/statefulsets.js';
import { horizontalpodautoscalers } from '../../src/api/resources/autoscaling/horizontalpodautoscalers.js';
import { eventsV1 } from '../../src/api/resources/events/events.js';
import { humanDuration } from '../../src/api/resources/common/table-util.js';
import type { KubeObject } from '../../src/api/resources/types.js';

t.test('registry: every resource is complete and unique', async (t) => {
  const seen = new Set<string>();
  for (const d of allResources()) {
    const key = `${d.group}/${d.plural}`;
    t.notOk(seen.has(key), `unique ${key}`);
    seen.add(key);
    t.ok(d.versions.includes(d.storageVersion), `${key} stores a served version`);
    t.ok(d.kind && d.listKind === `${d.kind}List` && d.singular, `${key} names`);
    t.ok(d.verbs.includes('get'), `${key} verbs`);
  }
  const short = new Map<string, string>();
  for (const d of allResources()) for (const s of d.shortNames ?? []) {
    // Events (core and events.k8s.io) and the extensions/v1beta1 views share their resource's
    // short name, as in Kubernetes; nothing else may.
    if (short.has(s)) t.ok(s === 'ev' || short.get(s) === d.plural, `only the same resource shares a short name (${s})`);
    short.set(s, d.plural);
  }
  for (const s of ['po', 'svc', 'rc', 'ns', 'no', 'ep', 'cm', 'sa', 'pv', 'pvc', 'quota', 'limits', 'ev', 'deploy', 'rs', 'ds', 'sts', 'cj', 'hpa', 'csr', 'sc', 'pdb', 'netpol', 'ing']) t.ok(short.has(s), `short name ${s}`);
  t.equal(findResource('apps', 'v1', 'deployments')?.kind, 'Deployment');
  t.equal(findResource('batch', 'v1beta1', 'cronjobs')?.kind, 'CronJob');
  t.equal(findResource('apps', 'v2', 'deployments'), undefined);
  t.equal(findByKind('', 'Pod')?.plural, 'pods');
  t.same(findResource('apps', 'v1', 'deployments')?.subresources?.scale, { specReplicasPath: 'spec.replicas', statusReplicasPath: 'status.replicas', labelSelectorPath: 'status.selector' });
});

t.test('pod defaults and validation', async (t) => {
  t.equal(defaultPullPolicy('nginx'), 'Always');
  t.equal(defaultPullPolicy('nginx:latest'), 'Always');
  t.equal(defaultPullPolicy('nginx:1.25'), 'IfNotPresent');
  t.equal(defaultPullPolicy('registry:5000/nginx'), 'Always');
  t.equal(defaultPullPolicy('nginx@sha256:abc'), 'IfNotPresent');
  const p: KubeObject = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'd' }, spec: { containers: [{ name: 'c', image: 'x', ports: [{ containerPort: 80 }, { containerPort: 80 }] }] } };
  pods.defaults!(p);
  const errs = pods.validate!(p);
  t.ok(errs.some((e) => e.type === 'FieldValueDuplicate'), 'duplicate ports');
  const bad: KubeObject = { metadata: { name: 'p', namespace: 'd' }, spec: { containers: [{ name: 'Bad', image: '' }], volumes: [{ name: 'v', emptyDir: {} }] } };
  const fields = pods.validate!(bad).map((e) => e.field).sort();
  t.same(fields, ['spec.containers[0].image', 'spec.containers[0].name']);
  const missingMount: KubeObject = { metadata: { name: 'p', namespace: 'd' }, spec: { containers: [{ name: 'c', image: 'i', volumeMounts: [{ name: 'nope', mountPath: '/x' }] }] } };
  t.match(pods.validate!(missingMount), [{ field: 'spec.containers[0].volumeMounts[0].name', type: 'FieldValueNotFound' }]);
  t.equal(podStatusReason({ metadata: {}, spec: {}, status: { phase: 'Pending', containerStatuses: [{ state: { waiting: { reason: 'ImagePullBackOff' } } }] } }), 'ImagePullBackOff');
  t.equal(podStatusReason({ metadata: { deletionTimestamp: 'x' }, status: { phase: 'Running' } }), 'Terminating');
  t.equal(podStatusReason({ metadata: {}, spec: { initContainers: [{}, {}] }, status: { phase: 'Pending', initContainerStatuses: [{ state: { terminated: { exitCode: 0 } } }, { state: { running: {} } }] } }), 'Init:1/2');
  t.equal(pods.gracePeriodSeconds!({ spec: {} }, undefined), 0, 'unscheduled pods go at once');
  t.equal(pods.gracePeriodSeconds!({ spec: { nodeName: 'n', terminationGracePeriodSeconds: 7 } }, undefined), 7);
  t.equal(pods.gracePeriodSeconds!({ spec: { nodeName: 'n' }, status: { phase: 'Succeeded' } }, 30), 0);
});

t.test('secrets fold stringData into data; services validate ports', async (t) => {
  const s: KubeObject = { metadata: { name: 's', namespace: 'd' }, stringData: { user: 'admin' }, data: { a: 'Yg==' } };
  secrets.defaults!(s);
  t.same(s.data, { a: 'Yg==', user: 'YWRtaW4=' });
  t.equal(s.type, 'Opaque');
  t.notOk('stringData' in s);
  const tls: KubeObject = { metadata: { name: 's', namespace: 'd' }, type: 'kubernetes.io/tls', data: {} };
  t.same(secrets.validate!(tls).map((e) => e.field), ['data[tls.crt]', 'data[tls.key]']);
  const svc: KubeObject = { metadata: { name: 's', namespace: 'd' }, spec: { ports: [{ port: 80 }, { port: 80 }] } };
  services.defaults!(svc);
  const fields = services.validate!(svc).map((e) => e.field);
  t.ok(fields.includes('spec.ports[0].name') && fields.includes('spec.ports[1]'), 'names required with 2 ports; duplicates');
  t.same(services.validate!({ metadata: { name: 's', namespace: 'd' }, spec: {} }).map((e) => e.field), ['spec.ports']);
  // Port names are DNS-1123 labels: kubectl create service nodeport --tcp=5678:8080 names its port "5678-8080".
  const named = (name: string): KubeObject => ({ metadata: { name: 's', namespace: 'd' }, spec: { ports: [{ name, port: 5678, targetPort: 8080 }] } });
  t.same(services.validate!(named('5678-8080')), [], 'a name starting with a digit is a valid port name');
  t.match(services.validate!(named('Bad_Name')), [{ field: 'spec.ports[0].name', message: /a lowercase RFC 1123 label must consist of/ }]);
});

t.test('conversions', async (t) => {
  const v1: KubeObject = { apiVersion: 'autoscaling/v1', kind: 'HorizontalPodAutoscaler', metadata: { name: 'h' }, spec: { maxReplicas: 3, targetCPUUtilizationPercentage: 50, scaleTargetRef: { kind: 'Deployment', name: 'd' } } };
  const v2 = horizontalpodautoscalers.convert!(v1, 'v2');
  t.equal(v2.apiVersion, 'autoscaling/v2');
  const back = horizontalpodautoscalers.convert!({ ...v2, spec: { ...(v2.spec as object), metrics: [...((v2.spec as { metrics: unknown[] }).metrics), { type: 'Pods', pods: { metric: { name: 'qps' }, target: { type: 'AverageValue', averageValue: '1' } } }] } }, 'v1');
  t.equal((back.spec as Record<string, unknown>).targetCPUUtilizationPercentage, 50);
  const again = horizontalpodautoscalers.convert!(back, 'v2');
  t.equal(((again.spec as { metrics: unknown[] }).metrics).length, 2, 'non-CPU metrics survive a v1 round trip');
  const ev: KubeObject = { apiVersion: 'events.k8s.io/v1', kind: 'Event', note: 'n', regarding: { name: 'x' }, deprecatedCount: 2 };
  const core = eventsV1.convert!(ev, 'storage');
  t.match(core, { apiVersion: 'v1', message: 'n', involvedObject: { name: 'x' }, count: 2 });
  t.match(eventsV1.convert!(core, 'v1'), { apiVersion: 'events.k8s.io/v1', note: 'n', regarding: { name: 'x' } });
});

t.test('humanDuration matches kubectl', async (t) => {
  const s = 1000;
  t.equal(humanDuration(5 * s), '5s');
  t.equal(humanDuration(119 * s), '119s');
  t.equal(humanDuration(150 * s), '2m30s');
  t.equal(humanDuration(30 * 60 * s), '30m');
  t.equal(humanDuration(5 * 3600 * s), '5h');
  t.equal(humanDuration((5 * 3600 + 120) * s), '5h2m');
  t.equal(humanDuration(30 * 3600 * s), '30h');
  t.equal(humanDuration(3 * 86400 * s), '3d');
  t.equal(humanDuration(400 * 86400 * s), '400d');
});

t.test('nodes: podCIDR and podCIDRs agree, one CIDR per family, fixed once set', async (t) => {
  const nodes = findResource('', 'v1', 'nodes')!;
  const node = (spec: Record<string, unknown>): KubeObject => ({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n' }, spec });
  const defaulted = (spec: Record<string, unknown>): KubeObject => { const o = node(spec); nodes.defaults!(o); return o; };
  const fields = (o: KubeObject, old?: KubeObject): string[] => (nodes.validate!(o, old)).map((e) => `${e.field}: ${e.message}`);
  t.same(defaulted({ podCIDR: '10.244.1.0/24' }).spec, { podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24'] }, 'podCIDR alone gives podCIDRs');
  t.same(defaulted({ podCIDRs: ['10.244.2.0/24', 'fd00::/64'] }).spec, { podCIDR: '10.244.2.0/24', podCIDRs: ['10.244.2.0/24', 'fd00::/64'] }, 'podCIDRs alone gives podCIDR');
  t.same(fields(defaulted({ podCIDRs: ['10.244.2.0/24', 'fd00::/64'] })), [], 'dual-stack is valid');
  t.match(fields(defaulted({ podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.2.0/24'] })), [/^spec\.podCIDR: .*must match the first entry of spec\.podCIDRs$/]);
  t.match(fields(defaulted({ podCIDRs: ['10.244.2.0/24', '10.244.3.0/24'] })), [/^spec\.podCIDRs: .*may specify no more than one CIDR for each IP family$/]);
  t.match(fields(defaulted({ podCIDRs: ['10.244.2.0/24', 'fd00::/64', '10.1.0.0/16'] })), [/^spec\.podCIDRs: .*may specify no more than one CIDR for each IP family$/]);
  t.match(fields(defaulted({ podCIDRs: ['10.244.2.0/33'] })), [/^spec\.podCIDRs\[0\]: .*must be a valid CIDR/]);
  const set = defaulted({ podCIDR: '10.244.1.0/24' });
  t.same(fields(set, defaulted({})), [], 'set once from empty');
  t.match(fields(defaulted({ podCIDRs: ['10.244.9.0/24'] }), set), [/^spec\.podCIDR: .*node updates may not change podCIDR except from "" to valid$/, /^spec\.podCIDRs: .*node updates may not change podCIDR except from "" to valid$/]);
  t.match(fields(defaulted({ podCIDRs: ['10.244.1.0/24', 'fd00::/64'] }), set), [/^spec\.podCIDRs: .*node updates may not change podCIDR except from "" to valid$/], 'nor add a second family later');
});

t.test('a StatefulSet template may mount its volumeClaimTemplates (its pods get a volume per claim)', async (t) => {
  const sts = (mount: string): KubeObject => ({
    metadata: { name: 'web', namespace: 'd' },
    spec: {
      selector: { matchLabels: { app: 'web' } }, serviceName: 'web',
      template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'nginx', volumeMounts: [{ name: mount, mountPath: '/data' }] }] } },
      volumeClaimTemplates: [{ metadata: { name: 'www' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }],
    },
  });
  const ok = sts('www');
  statefulsets.defaults!(ok);
  t.same(statefulsets.validate!(ok), [], 'a claim template is a volume of the pods');
  const bad = sts('nope');
  statefulsets.defaults!(bad);
  t.match(statefulsets.validate!(bad), [{ field: 'spec.template.spec.containers[0].volumeMounts[0].name', type: 'FieldValueNotFound' }], 'other names are still checked');
});
