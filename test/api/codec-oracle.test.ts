// Our protobuf bytes read by an independent decoder: protobufjs loaded with the descriptors
// embedded in the newest kubectl binary (skipped when none is installed).
import t from 'tap';
import protobuf from 'protobufjs';
import { decodeProtobuf, encodeProtobuf } from '../../src/api/codec/protobuf.js';
import { encodeWatchEventProtobuf } from '../../src/api/codec/watch-frame.js';
import { newestKubectlDescriptors } from '../helpers/kubectl-descriptors.js';

const oracle = newestKubectlDescriptors();
const opts = { longs: Number, bytes: String, defaults: false };

function unwrap(root: protobuf.Root, bytes: Uint8Array): { apiVersion: string; kind: string; raw: Uint8Array } {
  const u = root.lookupType('k8s.io.apimachinery.pkg.runtime.Unknown').decode(bytes.subarray(4)) as unknown as {
    typeMeta: { apiVersion: string; kind: string }; raw: Uint8Array;
  };
  return { ...u.typeMeta, raw: u.raw };
}

t.test('kubectl descriptors read our bytes', { skip: oracle ? false : 'no kubectl.1.NN on this machine' }, async (t) => {
  const root = oracle!.root;
  const type = (n: string): protobuf.Type => root.lookupType(n);

  const discovery = { apiVersion: 'v1', kind: 'APIResourceList', groupVersion: 'apps/v1',
    resources: [{ name: 'deployments', singularName: 'deployment', namespaced: true, kind: 'Deployment', verbs: ['get', 'list', 'watch'], shortNames: ['deploy'] }] };
  const env = unwrap(root, encodeProtobuf(discovery));
  t.same([env.apiVersion, env.kind], ['v1', 'APIResourceList']);
  const list = type('k8s.io.apimachinery.pkg.apis.meta.v1.APIResourceList').toObject(
    type('k8s.io.apimachinery.pkg.apis.meta.v1.APIResourceList').decode(env.raw), opts) as {
    resources: Array<{ verbs: { items: string[] }; shortNames: string[] }>;
  };
  t.same(list.resources[0].verbs.items, ['get', 'list', 'watch'], 'Verbs is a message wrapping the list');
  t.same(decodeProtobuf(encodeProtobuf(discovery)), discovery);

  const dep = { apiVersion: 'apps/v1', kind: 'DeploymentList', metadata: { resourceVersion: '9', remainingItemCount: 0 },
    items: [{ metadata: { name: 'd', namespace: 'ns', labels: { b: '2', a: '1' } },
      spec: { replicas: 0, selector: { matchLabels: { app: 'd' } }, strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: 1 } },
        template: { spec: { containers: [{ name: 'c', image: 'i', resources: { limits: { cpu: '500m' } } }] } } } }] };
  const d = type('k8s.io.api.apps.v1.DeploymentList').decode(unwrap(root, encodeProtobuf(dep)).raw) as unknown as {
    metadata: { remainingItemCount?: unknown }; items: Array<{ spec: { replicas?: number; strategy: { rollingUpdate: { maxSurge: { type: unknown; strVal: string }; maxUnavailable: { intVal: number } } };
      template: { spec: { containers: Array<{ resources: { limits: Record<string, { string: string }> } }> } } } }>;
  };
  t.equal(d.items[0].spec.replicas, 0, 'replicas: 0 is on the wire');
  t.ok(Object.prototype.hasOwnProperty.call(d.items[0].spec, 'replicas'));
  t.equal(d.items[0].spec.strategy.rollingUpdate.maxSurge.strVal, '25%');
  t.equal(d.items[0].spec.strategy.rollingUpdate.maxUnavailable.intVal, 1);
  t.equal(d.items[0].spec.template.spec.containers[0].resources.limits.cpu.string, '500m');

  const frame = encodeWatchEventProtobuf('MODIFIED', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', creationTimestamp: '2026-01-02T03:04:05Z' } });
  const ev = type('k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent').decode(frame.subarray(4)) as unknown as { type: string; object: { raw: Uint8Array } };
  t.equal(ev.type, 'MODIFIED');
  const inner = unwrap(root, ev.object.raw);
  t.same([inner.apiVersion, inner.kind], ['v1', 'Pod']);
  const pod = type('k8s.io.api.core.v1.Pod').decode(inner.raw) as unknown as { metadata: { name: string; creationTimestamp: { seconds: unknown } } };
  t.equal(pod.metadata.name, 'p');
  t.equal(Number(pod.metadata.creationTimestamp.seconds), Date.parse('2026-01-02T03:04:05Z') / 1000);
});
