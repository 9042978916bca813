// Strategic merge patch against the real schema registry (Pod and Deployment).
import t from 'tap';
import { strategicMerge } from '../../src/api/patch/strategic-merge.js';
import { schema } from '../../src/api/schema/registry.js';

const deployment = schema.forKind('apps', 'v1', 'Deployment');
const pod = schema.forKind('', 'v1', 'Pod');

function hasDirective(v: unknown): boolean {
  if (Array.isArray(v)) return v.some(hasDirective);
  if (typeof v === 'object' && v !== null) return Object.entries(v).some(([k, x]) => k.startsWith('$') || hasDirective(x));
  return false;
}

const liveDeployment = () => ({
  apiVersion: 'apps/v1', kind: 'Deployment',
  metadata: { name: 'web', namespace: 'default', labels: { app: 'web' }, annotations: { 'deployment.kubernetes.io/revision': '1' } },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: 'web' } },
    strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } },
    template: {
      metadata: { labels: { app: 'web' } },
      spec: {
        containers: [{ name: 'c', image: 'nginx:1.25', ports: [{ containerPort: 80, protocol: 'TCP' }], env: [{ name: 'A', value: '1' }], resources: {} }],
        restartPolicy: 'Always', dnsPolicy: 'ClusterFirst',
      },
    },
  },
  status: { observedGeneration: 1, replicas: 1 },
});

t.test('the registry declares the kinds', async (t) => {
  t.ok(deployment, 'apps/v1 Deployment');
  t.ok(pod, 'v1 Pod');
});

t.test('Deployment: kubectl apply body (kubectl-contract.md section 2)', async (t) => {
  const patch = JSON.parse('{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}},"spec":{"replicas":2,"template":{"spec":{"$setElementOrder/containers":[{"name":"c"}],"containers":[{"image":"nginx:1.26","name":"c"}]}}}}');
  const out = strategicMerge(liveDeployment(), patch, deployment, schema) as any;
  t.notOk(hasDirective(out));
  t.equal(out.spec.replicas, 2);
  t.same(out.spec.template.spec.containers, [{ name: 'c', image: 'nginx:1.26', ports: [{ containerPort: 80, protocol: 'TCP' }], env: [{ name: 'A', value: '1' }], resources: {} }]);
  t.same(out.metadata.annotations, { 'deployment.kubernetes.io/revision': '1', 'kubectl.kubernetes.io/last-applied-configuration': '{}' });
  t.same(out.status, { observedGeneration: 1, replicas: 1 });
});

t.test('Deployment: switching to Recreate with $retainKeys (what kubectl apply sends)', async (t) => {
  const patch = { spec: { strategy: { $retainKeys: ['type'], type: 'Recreate' } } };
  const out = strategicMerge(liveDeployment(), patch, deployment, schema) as any;
  t.same(out.spec.strategy, { type: 'Recreate' });
});

t.test('Deployment: kubectl set image / rollout restart style patches', async (t) => {
  const setImage = { spec: { template: { spec: { containers: [{ name: 'c', image: 'nginx:1.27' }] } } } };
  const out = strategicMerge(liveDeployment(), setImage, deployment, schema) as any;
  t.equal(out.spec.template.spec.containers[0].image, 'nginx:1.27');
  t.same(out.spec.template.spec.containers[0].ports, [{ containerPort: 80, protocol: 'TCP' }]);
  const restart = { spec: { template: { metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': '2026-01-01T00:00:00Z' } } } } };
  const r = strategicMerge(out, restart, deployment, schema) as any;
  t.same(r.spec.template.metadata, { labels: { app: 'web' }, annotations: { 'kubectl.kubernetes.io/restartedAt': '2026-01-01T00:00:00Z' } });
});

t.test('Pod: volumes with inline sources and retainKeys, env and ports by key', async (t) => {
  const live = {
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', finalizers: ['a'] },
    spec: {
      containers: [{ name: 'c', image: 'busybox', volumeMounts: [{ name: 'data', mountPath: '/data' }], ports: [{ containerPort: 80, protocol: 'TCP' }] }],
      volumes: [{ name: 'data', emptyDir: {} }, { name: 'cfg', configMap: { name: 'old' } }],
      tolerations: [{ key: 'a', operator: 'Exists' }],
    },
  };
  const patch = {
    metadata: { finalizers: ['b'] },
    spec: {
      '$setElementOrder/volumes': [{ name: 'data' }, { name: 'cfg' }],
      volumes: [{ $retainKeys: ['name', 'secret'], name: 'data', secret: { secretName: 's' } }, { name: 'cfg', configMap: { name: 'new' } }],
      containers: [{ name: 'c', volumeMounts: [{ mountPath: '/cache', name: 'data' }], ports: [{ containerPort: 8080 }] }],
      tolerations: [{ key: 'b', operator: 'Exists' }],
    },
  };
  const out = strategicMerge(live, patch, pod, schema) as any;
  t.notOk(hasDirective(out));
  t.same(out.spec.volumes, [{ name: 'data', secret: { secretName: 's' } }, { name: 'cfg', configMap: { name: 'new' } }]);
  t.same(out.spec.containers[0].volumeMounts, [{ mountPath: '/cache', name: 'data' }, { name: 'data', mountPath: '/data' }], 'volumeMounts merge by mountPath');
  t.same(out.spec.containers[0].ports, [{ containerPort: 8080 }, { containerPort: 80, protocol: 'TCP' }]);
  t.same(out.spec.tolerations, [{ key: 'b', operator: 'Exists' }], 'tolerations are replaced');
  t.same(out.metadata.finalizers, ['b', 'a'], 'finalizers are a merged set');
});

t.test('Pod: kubelet status patch merges conditions by type', async (t) => {
  const live = {
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'x' }] },
    status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True' }, { type: 'Ready', status: 'False' }] },
  };
  const patch = {
    status: {
      '$setElementOrder/conditions': [{ type: 'PodScheduled' }, { type: 'Ready' }, { type: 'ContainersReady' }],
      conditions: [{ type: 'Ready', status: 'True' }, { type: 'ContainersReady', status: 'True' }],
      phase: 'Running', podIP: '10.0.0.5',
    },
  };
  const out = strategicMerge(live, patch, pod, schema) as any;
  t.same(out.status.conditions, [{ type: 'PodScheduled', status: 'True' }, { type: 'Ready', status: 'True' }, { type: 'ContainersReady', status: 'True' }]);
  t.equal(out.status.phase, 'Running');
});
