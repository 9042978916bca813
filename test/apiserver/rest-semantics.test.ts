import t from 'tap';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient } from '../helpers/rest-client.js';

const a = await startApiserver({ args: ['--service-cluster-ip-range=10.96.0.0/28', '--service-node-port-range=30000-30004'] });
const c = await connectClient(a);
t.teardown(async () => { c.close(); await a.stop(); });

const pod = (name: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image: 'nginx' }], ...extra },
});
const deploy = (name: string): Record<string, unknown> => ({
  apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name },
  spec: { selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'nginx:1.25' }] } } },
});

t.test('pod defaults, status on create, immutable spec', async (t) => {
  const r = await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod('p-defaults', { containers: [{ name: 'c', image: 'nginx', ports: [{ containerPort: 80 }] }, { name: 'd', image: 'busybox:1.36' }] }) });
  t.equal(r.status, 201);
  const s = r.json.spec;
  t.match(s, { restartPolicy: 'Always', dnsPolicy: 'ClusterFirst', terminationGracePeriodSeconds: 30, schedulerName: 'default-scheduler', enableServiceLinks: true, priority: 0, preemptionPolicy: 'PreemptLowerPriority', securityContext: {} });
  t.equal(s.serviceAccountName, undefined, 'no ServiceAccount admission here (see admission.test.ts)');
  t.equal(s.containers[0].imagePullPolicy, 'Always');
  t.equal(s.containers[1].imagePullPolicy, 'IfNotPresent');
  t.equal(s.containers[0].ports[0].protocol, 'TCP');
  t.equal(s.containers[0].terminationMessagePath, '/dev/termination-log');
  t.match(r.json.status, { phase: 'Pending', qosClass: 'BestEffort' });
  t.equal(r.json.metadata.generation, 1);

  const img = await c.request('PATCH', '/api/v1/namespaces/default/pods/p-defaults', { raw: '{"spec":{"containers":[{"name":"c","image":"nginx:2"}]}}', contentType: 'application/strategic-merge-patch+json' });
  t.equal(img.status, 200, 'image change allowed');
  t.equal(img.json.metadata.generation, 2);
  const forbidden = await c.request('PATCH', '/api/v1/namespaces/default/pods/p-defaults', { raw: '{"spec":{"restartPolicy":"Never"}}', contentType: 'application/merge-patch+json' });
  t.equal(forbidden.status, 422);
  t.match(forbidden.json.message, /pod updates may not change fields other than/);

  const dup = await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod('p-dup', { containers: [{ name: 'c', image: 'a' }, { name: 'c', image: 'b' }], restartPolicy: 'Sometimes' }) });
  t.equal(dup.status, 422);
  t.match(dup.json.message, /spec.containers\[1\].name: Duplicate value: "c"/);
  t.match(dup.json.message, /spec.restartPolicy: Unsupported value: "Sometimes"/);
});

t.test('status subresource keeps spec; main writes keep status', async (t) => {
  const cur = (await c.request('GET', '/api/v1/namespaces/default/pods/p-defaults')).json;
  const st = await c.request('PUT', '/api/v1/namespaces/default/pods/p-defaults/status', { body: { ...cur, spec: { ...cur.spec, nodeName: 'sneaky' }, status: { phase: 'Running', podIP: '10.1.2.3' } } });
  t.equal(st.status, 200);
  t.equal(st.json.status.phase, 'Running');
  t.notOk(st.json.spec.nodeName, 'status write does not change spec');
  const main = await c.request('PATCH', '/api/v1/namespaces/default/pods/p-defaults', { raw: '{"status":{"phase":"Failed"},"metadata":{"labels":{"l":"v"}}}', contentType: 'application/merge-patch+json' });
  t.equal(main.json.status.phase, 'Running', 'main write does not change status');
  t.equal(main.json.metadata.labels.l, 'v');
  const sel = await c.request('GET', '/api/v1/namespaces/default/pods?fieldSelector=status.phase%3DRunning,status.podIP%3D10.1.2.3');
  t.same(sel.json.items.map((p: { metadata: { name: string } }) => p.metadata.name), ['p-defaults']);
});

t.test('binding, graceful deletion, eviction', async (t) => {
  await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod('p-bind') });
  const b = await c.request('POST', '/api/v1/namespaces/default/pods/p-bind/binding', { body: { apiVersion: 'v1', kind: 'Binding', metadata: { name: 'p-bind' }, target: { kind: 'Node', name: 'node-1' } } });
  t.equal(b.status, 201);
  t.equal(b.json.status, 'Success');
  const bound = (await c.request('GET', '/api/v1/namespaces/default/pods/p-bind')).json;
  t.equal(bound.spec.nodeName, 'node-1');
  t.ok(bound.status.conditions.some((x: { type: string; status: string }) => x.type === 'PodScheduled' && x.status === 'True'));
  const again = await c.request('POST', '/api/v1/namespaces/default/pods/p-bind/binding', { body: { target: { name: 'node-2' } } });
  t.equal(again.status, 409);
  t.match(again.json.message, /already assigned to node "node-1"/);

  const del = await c.request('DELETE', '/api/v1/namespaces/default/pods/p-bind', { body: { propagationPolicy: 'Background' } });
  t.equal(del.status, 200);
  t.ok(del.json.metadata.deletionTimestamp, 'scheduled pod is only marked');
  t.equal(del.json.metadata.deletionGracePeriodSeconds, 30);
  t.equal((await c.request('GET', '/api/v1/namespaces/default/pods/p-bind')).status, 200);
  const force = await c.request('DELETE', '/api/v1/namespaces/default/pods/p-bind', { body: { gracePeriodSeconds: 0 } });
  t.equal(force.status, 200);
  t.equal((await c.request('GET', '/api/v1/namespaces/default/pods/p-bind')).status, 404, 'grace 0 finishes it');

  await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod('p-unscheduled') });
  await c.request('DELETE', '/api/v1/namespaces/default/pods/p-unscheduled');
  t.equal((await c.request('GET', '/api/v1/namespaces/default/pods/p-unscheduled')).status, 404, 'never scheduled: deleted at once');

  await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod('p-evict') });
  const ev = await c.request('POST', '/api/v1/namespaces/default/pods/p-evict/eviction', { body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'p-evict' } } });
  t.equal(ev.status, 201);
  t.equal((await c.request('GET', '/api/v1/namespaces/default/pods/p-evict')).status, 404);
});

t.test('finalizers and propagation policies', async (t) => {
  await c.request('POST', '/api/v1/namespaces/default/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'fin', finalizers: ['example.com/hold'] } } });
  const d = await c.request('DELETE', '/api/v1/namespaces/default/configmaps/fin');
  t.equal(d.status, 200);
  t.ok(d.json.metadata.deletionTimestamp);
  t.equal(d.json.metadata.deletionGracePeriodSeconds, 0);
  const add = await c.request('PATCH', '/api/v1/namespaces/default/configmaps/fin', { raw: '{"metadata":{"finalizers":["example.com/hold","example.com/new"]}}', contentType: 'application/merge-patch+json' });
  t.equal(add.status, 422, 'no new finalizers on a deleting object');
  const rm = await c.request('PATCH', '/api/v1/namespaces/default/configmaps/fin', { raw: '{"metadata":{"finalizers":null}}', contentType: 'application/merge-patch+json' });
  t.equal(rm.status, 200);
  t.equal((await c.request('GET', '/api/v1/namespaces/default/configmaps/fin')).status, 404, 'removing the last finalizer deletes');

  await c.request('POST', '/apis/apps/v1/namespaces/default/deployments', { body: deploy('orph') });
  const o = await c.request('DELETE', '/apis/apps/v1/namespaces/default/deployments/orph', { body: { propagationPolicy: 'Orphan' } });
  t.same(o.json.metadata.finalizers, ['orphan']);
  await c.request('POST', '/apis/apps/v1/namespaces/default/deployments', { body: deploy('fg') });
  const f = await c.request('DELETE', '/apis/apps/v1/namespaces/default/deployments/fg?propagationPolicy=Foreground');
  t.same(f.json.metadata.finalizers, ['foregroundDeletion']);
  t.ok(f.json.metadata.deletionTimestamp);
  const both = await c.request('DELETE', '/apis/apps/v1/namespaces/default/deployments/fg', { body: { propagationPolicy: 'Orphan', orphanDependents: true } });
  t.equal(both.status, 422);

  await c.request('POST', '/api/v1/namespaces/default/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'pre' } } });
  const pre = await c.request('DELETE', '/api/v1/namespaces/default/configmaps/pre', { body: { preconditions: { uid: 'not-it' } } });
  t.equal(pre.status, 409);
  const dry = await c.request('DELETE', '/api/v1/namespaces/default/configmaps/pre?dryRun=All');
  t.equal(dry.status, 200);
  t.equal((await c.request('GET', '/api/v1/namespaces/default/configmaps/pre')).status, 200, 'dry-run delete keeps it');
});

t.test('deployments: defaults, validation, generation, scale', async (t) => {
  const r = await c.request('POST', '/apis/apps/v1/namespaces/default/deployments', { body: deploy('web') });
  t.equal(r.status, 201);
  t.match(r.json.spec, { replicas: 1, revisionHistoryLimit: 10, progressDeadlineSeconds: 600, strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } } });
  t.equal(r.json.metadata.generation, 1);
  const bad = await c.request('POST', '/apis/apps/v1/namespaces/default/deployments', { body: { ...deploy('bad'), spec: { selector: { matchLabels: { app: 'x' } }, template: { metadata: { labels: { app: 'y' } }, spec: { containers: [{ name: 'c', image: 'i' }] } } } } });
  t.equal(bad.status, 422);
  t.match(bad.json.message, /`selector` does not match template `labels`/);
  const sel = await c.request('PATCH', '/apis/apps/v1/namespaces/default/deployments/web', { raw: '{"spec":{"selector":{"matchLabels":{"app":"web","x":"y"}},"template":{"metadata":{"labels":{"x":"y"}}}}}', contentType: 'application/strategic-merge-patch+json' });
  t.equal(sel.status, 422, 'selector is immutable');

  const scale = await c.request('GET', '/apis/apps/v1/namespaces/default/deployments/web/scale');
  t.match(scale.json, { kind: 'Scale', apiVersion: 'autoscaling/v1', spec: { replicas: 1 }, status: { replicas: 0, selector: 'app=web' }, metadata: { name: 'web', namespace: 'default' } });
  const ps = await c.request('PATCH', '/apis/apps/v1/namespaces/default/deployments/web/scale', { raw: '{"spec":{"replicas":3}}', contentType: 'application/merge-patch+json' });
  t.equal(ps.status, 200);
  t.equal(ps.json.spec.replicas, 3);
  const after = (await c.request('GET', '/apis/apps/v1/namespaces/default/deployments/web')).json;
  t.equal(after.spec.replicas, 3);
  t.equal(after.metadata.generation, 2);
  const put = await c.request('PUT', '/apis/apps/v1/namespaces/default/deployments/web/scale', { body: { ...ps.json, spec: { replicas: 2 } } });
  t.equal(put.json.spec.replicas, 2);
  const stale = await c.request('PUT', '/apis/apps/v1/namespaces/default/deployments/web/scale', { body: { ...ps.json, spec: { replicas: 5 } } });
  t.equal(stale.status, 409);
  const neg = await c.request('PATCH', '/apis/apps/v1/namespaces/default/deployments/web/scale', { raw: '{"spec":{"replicas":-1}}', contentType: 'application/merge-patch+json' });
  t.equal(neg.status, 422);

  const labels = await c.request('PATCH', '/apis/apps/v1/namespaces/default/deployments/web', { raw: '{"metadata":{"labels":{"a":"b"}}}', contentType: 'application/merge-patch+json' });
  t.equal(labels.json.metadata.generation, 3, 'metadata-only change keeps generation');
});

t.test('namespace lifecycle', async (t) => {
  const ns = await c.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'doomed' } } });
  t.same(ns.json.spec, { finalizers: ['kubernetes'] });
  t.equal(ns.json.status.phase, 'Active');
  t.equal(ns.json.metadata.labels['kubernetes.io/metadata.name'], 'doomed');
  const d = await c.request('DELETE', '/api/v1/namespaces/doomed');
  t.equal(d.status, 200);
  t.equal(d.json.status.phase, 'Terminating');
  t.ok(d.json.metadata.deletionTimestamp);
  const create = await c.request('POST', '/api/v1/namespaces/doomed/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } } });
  t.equal(create.status, 403);
  t.match(create.json.message, /because it is being terminated/);
  const missing = await c.request('POST', '/api/v1/namespaces/absent/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } } });
  t.equal(missing.status, 404);
  const fin = await c.request('PUT', '/api/v1/namespaces/doomed/finalize', { body: { ...d.json, spec: { finalizers: [] } } });
  t.equal(fin.status, 200);
  t.equal((await c.request('GET', '/api/v1/namespaces/doomed')).status, 404, 'finalize with no finalizers left deletes it');
  t.equal((await c.request('DELETE', '/api/v1/namespaces/kube-system')).status, 403);
  const sys = await c.request('GET', '/api/v1/namespaces');
  for (const n of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) t.ok(sys.json.items.some((x: { metadata: { name: string } }) => x.metadata.name === n), n);
});

t.test('services: cluster IPs and node ports', async (t) => {
  const k = (await c.request('GET', '/api/v1/namespaces/default/services/kubernetes')).json;
  t.equal(k.spec.clusterIP, '10.96.0.1');
  t.match(k.spec.ports[0], { name: 'https', port: 443, protocol: 'TCP' });
  const ep = (await c.request('GET', '/api/v1/namespaces/default/endpoints/kubernetes')).json;
  t.equal(ep.subsets, undefined, 'the loopback advertise address is left out (Endpoints refuse it)');

  const svc = (name: string, spec: Record<string, unknown>): Record<string, unknown> => ({ apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { ports: [{ port: 80 }], selector: { app: name }, ...spec } });
  const s1 = await c.request('POST', '/api/v1/namespaces/default/services', { body: svc('s1', {}) });
  t.equal(s1.status, 201);
  t.match(s1.json.spec, { type: 'ClusterIP', sessionAffinity: 'None', ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack', internalTrafficPolicy: 'Cluster' });
  t.match(s1.json.spec.ports[0], { port: 80, targetPort: 80, protocol: 'TCP' });
  t.match(s1.json.spec.clusterIP, /^10\.96\.0\.([2-9]|1[0-4])$/);
  t.same(s1.json.spec.clusterIPs, [s1.json.spec.clusterIP]);

  const taken = await c.request('POST', '/api/v1/namespaces/default/services', { body: svc('s2', { clusterIP: s1.json.spec.clusterIP }) });
  t.equal(taken.status, 422);
  t.match(taken.json.message, /provided IP is already allocated/);
  const outside = await c.request('POST', '/api/v1/namespaces/default/services', { body: svc('s2', { clusterIP: '10.1.1.1' }) });
  t.equal(outside.status, 422);
  t.match(outside.json.message, /not in the valid range/);
  const headless = await c.request('POST', '/api/v1/namespaces/default/services', { body: svc('hl', { clusterIP: 'None' }) });
  t.equal(headless.json.spec.clusterIP, 'None');

  const np = await c.request('POST', '/api/v1/namespaces/default/services', { body: svc('np', { type: 'NodePort', ports: [{ name: 'a', port: 80 }, { name: 'b', port: 81, nodePort: 30004 }] }) });
  t.equal(np.status, 201);
  const ports = np.json.spec.ports.map((p: { nodePort: number }) => p.nodePort);
  t.equal(ports[1], 30004);
  t.ok(ports[0] >= 30000 && ports[0] <= 30003);
  const dupPort = await c.request('POST', '/api/v1/namespaces/default/services', { body: svc('np2', { type: 'NodePort', ports: [{ port: 80, nodePort: 30004 }] }) });
  t.equal(dupPort.status, 422);
  t.match(dupPort.json.message, /provided port is already allocated/);

  const otherIp = s1.json.spec.clusterIP === '10.96.0.13' ? '10.96.0.12' : '10.96.0.13';
  const ipChange = await c.request('PATCH', '/api/v1/namespaces/default/services/s1', { raw: JSON.stringify({ spec: { clusterIP: otherIp, clusterIPs: [otherIp] } }), contentType: 'application/merge-patch+json' });
  t.equal(ipChange.status, 422, 'clusterIP is immutable');

  // Concurrent creates never share an IP: 14 usable IPs minus kubernetes, s1 and np.
  const results = await Promise.all(Array.from({ length: 14 }, (_, i) => c.request('POST', '/api/v1/namespaces/default/services', { body: svc(`many-${i}`, {}) })));
  const ips = results.filter((r) => r.status === 201).map((r) => r.json.spec.clusterIP);
  t.equal(new Set(ips).size, ips.length, 'no duplicate IPs');
  // The statuses of the others are in the message, so a failure under load says what they got.
  t.equal(ips.length, 11, `range exhausted exactly (others: ${results.filter((r) => r.status !== 201).map((r) => `${r.status} ${r.body.toString().slice(0, 120)}`).join('; ')})`);
  t.ok(results.some((r) => r.status === 500), 'then the range is full');

  // Deleting releases: the freed IP can be requested again; changing type releases node ports.
  await c.request('DELETE', '/api/v1/namespaces/default/services/s1');
  const reuse = await c.request('POST', '/api/v1/namespaces/default/services', { body: svc('s1b', { clusterIP: s1.json.spec.clusterIP }) });
  t.equal(reuse.status, 201, 'IP released on delete');
  const toCluster = await c.request('PATCH', '/api/v1/namespaces/default/services/np', { raw: '{"spec":{"type":"ClusterIP","ports":[{"name":"a","port":80},{"name":"b","port":81}]}}', contentType: 'application/merge-patch+json' });
  t.equal(toCluster.status, 200);
  t.notOk(toCluster.json.spec.ports[1].nodePort);
  const np3 = await c.request('POST', '/api/v1/namespaces/default/services', { body: svc('np3', { type: 'NodePort', clusterIP: 'None', ports: [{ port: 80, nodePort: 30004 }] }) });
  t.equal(np3.status, 201, 'node port released on type change');

  await c.request('DELETE', '/api/v1/namespaces/default/services/many-0');
  const lb = await c.request('POST', '/api/v1/namespaces/default/services', { body: svc('lb', { type: 'LoadBalancer', externalTrafficPolicy: 'Local' }) });
  t.equal(lb.status, 201);
  const hc = lb.json.spec.healthCheckNodePort;
  t.ok(hc >= 30000 && hc <= 30003 && hc !== lb.json.spec.ports[0].nodePort, 'health-check node port allocated');
  t.equal(lb.json.spec.allocateLoadBalancerNodePorts, true);
  const lbTbl = await c.request('GET', '/api/v1/namespaces/default/services/lb', { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' });
  t.equal(lbTbl.json.rows[0].cells[3], '<pending>', 'EXTERNAL-IP pending without an ingress');
  const cluster = await c.request('PATCH', '/api/v1/namespaces/default/services/lb', { raw: '{"spec":{"externalTrafficPolicy":"Cluster"}}', contentType: 'application/merge-patch+json' });
  t.equal(cluster.status, 200);
  t.notOk(cluster.json.spec.healthCheckNodePort, 'released when no longer needed');
  const reuseHc = await c.request('POST', '/api/v1/namespaces/default/services', { body: svc('hc', { type: 'NodePort', clusterIP: 'None', ports: [{ port: 80, nodePort: hc }] }) });
  t.equal(reuseHc.status, 201, 'the health-check port is free again');
});

t.test('multi-version resources: HPA v1/v2 and events.k8s.io', async (t) => {
  const h = await c.request('POST', '/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers', {
    body: { apiVersion: 'autoscaling/v1', kind: 'HorizontalPodAutoscaler', metadata: { name: 'h' }, spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }, maxReplicas: 5, targetCPUUtilizationPercentage: 60 } },
  });
  t.equal(h.status, 201);
  t.equal(h.json.apiVersion, 'autoscaling/v1');
  t.equal(h.json.spec.targetCPUUtilizationPercentage, 60);
  t.equal(h.json.spec.minReplicas, 1);
  const v2 = (await c.request('GET', '/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/h')).json;
  t.equal(v2.apiVersion, 'autoscaling/v2');
  t.same(v2.spec.metrics, [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 60 } } }]);

  // --storage-versions defaults to autoscaling/v1: v2-only fields survive in annotations.
  const behavior = { scaleDown: { stabilizationWindowSeconds: 60, selectPolicy: 'Max', policies: [{ type: 'Pods', value: 1, periodSeconds: 30 }] } };
  const podsMetric = { type: 'Pods', pods: { metric: { name: 'qps' }, target: { type: 'AverageValue', averageValue: '10' } } };
  const h2 = await c.request('POST', '/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers', {
    body: { apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', metadata: { name: 'h2' }, spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }, minReplicas: 2, maxReplicas: 5, behavior, metrics: [podsMetric] } },
  });
  t.equal(h2.status, 201);
  t.same(h2.json.spec.behavior, behavior);
  t.same(h2.json.spec.metrics, [podsMetric]);
  const conditions = [{ type: 'AbleToScale', status: 'True', reason: 'ReadyForNewScale', lastTransitionTime: '2024-01-01T00:00:00Z' }];
  const st = await c.request('PUT', '/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/h2/status', { body: { ...h2.json, status: { currentReplicas: 2, desiredReplicas: 2, conditions } } });
  t.equal(st.status, 200);
  const back = (await c.request('GET', '/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/h2')).json;
  t.same(back.spec.behavior, behavior, 'behavior kept through v1 storage');
  t.same(back.spec.metrics, [podsMetric]);
  t.same(back.status.conditions, conditions);
  t.notOk(back.metadata.annotations, 'no stash annotations in v2');
  const raw = await a.parts!.store.get({ resource: 'horizontalpodautoscalers', group: 'autoscaling', namespace: 'default', name: 'h2' });
  t.equal(raw.apiVersion, 'autoscaling/v1', 'stored in the --storage-versions version');
  const hTbl = await c.request('GET', '/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/h', { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' });
  t.same(hTbl.json.rows[0].cells.slice(1, 3), ['Deployment/web', 'cpu: <unknown>/60%']);

  const e = await c.request('POST', '/apis/events.k8s.io/v1/namespaces/default/events', {
    body: { apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: { name: 'e1' }, eventTime: '2024-01-01T00:00:00.000000Z', type: 'Normal', reason: 'Test', action: 'Testing', reportingController: 'tests', reportingInstance: 'x', note: 'hello', regarding: { kind: 'Pod', name: 'p', namespace: 'default' } },
  });
  t.equal(e.status, 201);
  t.equal(e.json.note, 'hello');
  const core = (await c.request('GET', '/api/v1/namespaces/default/events/e1')).json;
  t.equal(core.message, 'hello', 'same object through core/v1');
  t.equal(core.involvedObject.name, 'p');
  const sel = await c.request('GET', '/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dp,involvedObject.kind%3DPod,reason%3DTest');
  t.equal(sel.json.items.length, 1);
});

t.test('repair of malformed updates and deletecollection', async (t) => {
  await c.request('POST', '/api/v1/namespaces/default/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'r1', uid: '' } } });
  const u = await c.request('PUT', '/api/v1/namespaces/default/configmaps/r1', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'r1', uid: '' }, data: { a: 'b' } } });
  t.equal(u.status, 200);
  t.ok(u.json.metadata.uid, 'empty uid repaired from the stored object');
  for (const n of ['dc1', 'dc2', 'dc3']) await c.request('POST', '/api/v1/namespaces/default/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: n, labels: { dc: n === 'dc3' ? 'no' : 'yes' } } } });
  const dc = await c.request('DELETE', '/api/v1/namespaces/default/configmaps?labelSelector=dc%3Dyes');
  t.equal(dc.status, 200);
  t.equal(dc.json.kind, 'ConfigMapList');
  t.equal(dc.json.items.length, 2);
  const left = await c.request('GET', '/api/v1/namespaces/default/configmaps?labelSelector=dc');
  t.same(left.json.items.map((x: { metadata: { name: string } }) => x.metadata.name), ['dc3']);
  t.equal((await c.request('DELETE', '/api/v1/namespaces')).status, 405, 'namespaces have no deletecollection');
});

t.test('long tail: CSR requestor, node taints, secrets, cronjobs v1beta1, leases', async (t) => {
  const pem = Buffer.from('-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n').toString('base64');
  const csr = await c.request('POST', '/apis/certificates.k8s.io/v1/certificatesigningrequests', {
    body: { apiVersion: 'certificates.k8s.io/v1', kind: 'CertificateSigningRequest', metadata: { name: 'csr1' }, spec: { request: pem, signerName: 'kubernetes.io/kube-apiserver-client', usages: ['client auth'], username: 'spoofed' } },
  });
  t.equal(csr.status, 201);
  t.equal(csr.json.spec.username, 'admin', 'requestor comes from authentication');
  t.ok(csr.json.spec.groups.includes('system:masters'));

  const node = await c.request('POST', '/api/v1/nodes', { body: { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec: { taints: [{ key: 'k', value: 'v', effect: 'Sideways' }] } } });
  t.equal(node.status, 422);
  t.match(node.json.message, /spec.taints\[0\].effect: Unsupported value: "Sideways"/);
  const okNode = await c.request('POST', '/api/v1/nodes', { body: { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec: { taints: [{ key: 'k', effect: 'NoSchedule' }] }, status: { conditions: [{ type: 'Ready', status: 'True' }] } } });
  t.equal(okNode.status, 201);
  t.equal(okNode.json.metadata.namespace, undefined, 'cluster-scoped');
  const unsched = await c.request('GET', '/api/v1/nodes?fieldSelector=spec.unschedulable%3Dfalse');
  t.equal(unsched.json.items.length, 1);

  const sec = await c.request('POST', '/api/v1/namespaces/default/secrets', { body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's1' }, stringData: { password: 'pw' } } });
  t.equal(sec.status, 201);
  t.same(sec.json.data, { password: Buffer.from('pw').toString('base64') });
  t.equal(sec.json.type, 'Opaque');
  t.notOk('stringData' in sec.json);
  const frozen = await c.request('POST', '/api/v1/namespaces/default/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'frozen' }, immutable: true, data: { a: 'b' } } });
  t.equal(frozen.status, 201);
  const thaw = await c.request('PATCH', '/api/v1/namespaces/default/configmaps/frozen', { raw: '{"data":{"a":"c"}}', contentType: 'application/merge-patch+json' });
  t.equal(thaw.status, 422, 'immutable configmap data');

  const cj = await c.request('POST', '/apis/batch/v1beta1/namespaces/default/cronjobs', {
    body: { apiVersion: 'batch/v1beta1', kind: 'CronJob', metadata: { name: 'cj' }, spec: { schedule: '*/5 * * * *', jobTemplate: { spec: { template: { spec: { restartPolicy: 'OnFailure', containers: [{ name: 'c', image: 'busybox' }] } } } } } },
  });
  t.equal(cj.status, 201);
  t.equal(cj.json.apiVersion, 'batch/v1beta1');
  t.equal(cj.json.spec.concurrencyPolicy, 'Allow');
  t.equal((await c.request('GET', '/apis/batch/v1/namespaces/default/cronjobs/cj')).json.apiVersion, 'batch/v1');
  const badCron = await c.request('POST', '/apis/batch/v1/namespaces/default/cronjobs', { body: { apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name: 'bad' }, spec: { schedule: 'never', jobTemplate: { spec: { template: { spec: { restartPolicy: 'OnFailure', containers: [{ name: 'c', image: 'b' }] } } } } } } });
  t.equal(badCron.status, 422);
  const cron = (name: string, schedule: string, timeZone?: string): Promise<{ status: number; json: { message: string } }> => c.request('POST', '/apis/batch/v1/namespaces/default/cronjobs', { body: { apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name },
    spec: { schedule, ...(timeZone !== undefined ? { timeZone } : {}), jobTemplate: { spec: { template: { spec: { restartPolicy: 'OnFailure', containers: [{ name: 'c', image: 'b' }] } } } } } } });
  const range = await cron('range', '99 * * * *');
  t.equal(range.status, 422, 'a minute out of range');
  t.match(range.json.message, /spec.schedule: Invalid value: "99 \* \* \* \*": unparseable schedule/);
  t.equal((await cron('macro', '@fortnightly')).status, 422, 'an unknown macro');
  t.equal((await cron('sunday7', '0 0 * * 7')).status, 422, 'weekday 7 (Kubernetes takes 0-6)');
  t.equal((await cron('tz', 'TZ=UTC 0 * * * *')).status, 422, 'TZ= in the schedule');
  t.equal((await cron('hourly', '@hourly')).status, 201);
  t.equal((await cron('every', '@every 1h30m')).status, 201);
  t.equal((await cron('tokyo', '0 9 * * MON-FRI', 'Asia/Tokyo')).status, 201);
  const zone = await cron('nowhere', '0 9 * * *', 'Mars/Olympus');
  t.equal(zone.status, 422);
  t.match(zone.json.message, /spec.timeZone: Invalid value: "Mars\/Olympus": unknown time zone Mars\/Olympus/);
  t.equal((await cron('local', '0 9 * * *', 'Local')).status, 422, '"Local" is not a zone name');

  const lease = await c.request('PUT', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1', { body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'n1' }, spec: { holderIdentity: 'n1', leaseDurationSeconds: 40 } } });
  t.equal(lease.status, 201, 'leases are created on update');
  const job = await c.request('POST', '/apis/batch/v1/namespaces/default/jobs', { body: { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j' }, spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } } } } });
  t.equal(job.status, 201);
  t.match(job.json.spec, { completions: 1, parallelism: 1, backoffLimit: 6 });
  t.equal(job.json.spec.selector.matchLabels['batch.kubernetes.io/controller-uid'], job.json.metadata.uid, 'generated selector uses the job uid');
});

t.test('extension points: whole-resource and subresource handlers', async (t) => {
  const { defineResource } = await import('../../src/api/resources/common/define.js');
  const rest = a.parts!.rest as unknown as import('../../src/daemons/apiserver/rest/rest-api.js').RestApi;
  rest.addResourceHandler(defineResource({ group: 'authorization.k8s.io', versions: ['v1'], kind: 'SelfSubjectAccessReview', plural: 'selfsubjectaccessreviews', namespaced: false, verbs: ['create'] }),
    async (_ctx, _req, res) => { res.statusCode = 201; res.setHeader('content-type', 'application/json'); res.end(JSON.stringify({ kind: 'SelfSubjectAccessReview', status: { allowed: true } })); });
  rest.addSubresourceHandler('', 'pods', 'log', async (_ctx, _req, res, target) => { res.statusCode = 200; res.setHeader('content-type', 'text/plain'); res.end(`log of ${target.name}`); });
  const r = await c.request('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', { body: { spec: {} } });
  t.equal(r.status, 201);
  t.equal(r.json.status.allowed, true);
  const d = (await c.request('GET', '/apis/authorization.k8s.io/v1')).json;
  t.ok(d.resources.some((x: { name: string }) => x.name === 'selfsubjectaccessreviews'), 'listed in discovery');
  const log = await c.request('GET', '/api/v1/namespaces/default/pods/p-defaults/log');
  t.equal(log.body.toString(), 'log of p-defaults');
});
