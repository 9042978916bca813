// The HPA controller against a real API server, the metrics server and a fake node agent whose
// CPU figures the test sets: `kubectl autoscale` at 50 % CPU scales a Deployment out (bounded by
// max(2×current, 4)) while the pods burn 200 % of their request and back in once they idle and
// the downscale stabilization has passed; kubectl get hpa shows current/target; the conditions
// and the SuccessfulRescale events are Kubernetes'.
import * as https from 'node:https';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setMaxListeners } from 'node:events';
import { pino } from 'pino';
import t from 'tap';
import { loadCoreconfig } from '../../../src/client/coreconfig.js';
import { SharedInformerFactory } from '../../../src/client/informer-factory.js';
import { RestClient } from '../../../src/client/rest-client.js';
import { newEventRecorder } from '../../../src/daemons/controller-manager/events.js';
import { HorizontalPodAutoscalingController } from '../../../src/daemons/controller-manager/controllers/horizontalpodautoscaling/controller.js';
import { startMetricsServer } from '../../../src/daemons/metrics-server/server.js';
import { parseControllerManagerArgs } from '../../../src/flags/controller-manager.js';
import { createCA, createSelfSignedServing, issueCert, writePemFile } from '../../../src/util/pki.js';
import { startApiserver } from '../../helpers/apiserver.js';
import { kubectl } from '../../helpers/kubectl.js';
import { kubectlRunner } from '../../helpers/kubectl-run.js';
import { waitFor } from '../../helpers/wait-for.js';

const bin = kubectl(33);
const hostIp = Object.values(networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
const PODS = ['web-a', 'web-b'];

/** A node agent whose containers each use `load.cores` CPU. */
async function fakeAgent(load: { cores: number }): Promise<{ port: number; close(): Promise<void> }> {
  const pair = await createSelfSignedServing({ host: 'agent', dnsNames: ['localhost'], ips: ['127.0.0.1'] });
  let last = Date.now();
  let cpu = 0;
  const server = https.createServer({ cert: pair.certPem, key: pair.keyPem }, (_req, res) => {
    const now = Date.now();
    cpu += load.cores * (now - last) / 1000;
    last = now;
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end([
      `node_cpu_usage_seconds_total ${cpu * 2} ${now}`, `node_memory_working_set_bytes 1e9 ${now}`,
      ...PODS.flatMap((p) => [
        `container_cpu_usage_seconds_total{container="burn",namespace="default",pod="${p}"} ${cpu} ${now}`,
        `container_memory_working_set_bytes{container="burn",namespace="default",pod="${p}"} 1e6 ${now}`,
      ]), '',
    ].join('\n'));
  });
  await new Promise<void>((r) => server.listen(0, '0.0.0.0', r));
  return { port: (server.address() as AddressInfo).port, async close() { server.closeAllConnections(); await new Promise((r) => server.close(r)); } };
}

t.test('an HPA at 50 % CPU scales a Deployment out and back in', { skip: !bin ? 'kubectl.1.33 not installed' : !hostIp ? 'no non-loopback IPv4 address' : false }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'hpa-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const frontCa = await createCA({ commonName: 'front-proxy-ca' });
  const proxyClient = await issueCert({ ca: frontCa, commonName: 'front-proxy-client', usages: 'client' });
  const f = { ca: join(dir, 'ca.crt'), cert: join(dir, 'c.crt'), key: join(dir, 'c.key') };
  await Promise.all([writePemFile(f.ca, frontCa.certPem), writePemFile(f.cert, proxyClient.certPem), writePemFile(f.key, proxyClient.keyPem)]);
  const a = await startApiserver({ args: [
    '--enable-aggregator-routing=true', `--requestheader-client-ca-file=${f.ca}`, '--requestheader-allowed-names=front-proxy-client',
    '--requestheader-username-headers=X-Remote-User', '--requestheader-group-headers=X-Remote-Group', '--requestheader-extra-headers-prefix=X-Remote-Extra-',
    `--proxy-client-cert-file=${f.cert}`, `--proxy-client-key-file=${f.key}`,
  ] });
  t.teardown(() => a.stop());
  const k = kubectlRunner(bin!, a.coreconfigPath, join(a.dir, 'kcache'));
  const load = { cores: 0.2 };
  const agent = await fakeAgent(load);
  t.teardown(() => agent.close());
  const connection = await loadCoreconfig({ path: a.coreconfigPath });
  const client = new RestClient({ connection, qps: 0, contentType: 'application/json' });
  t.teardown(() => client.close());

  const tenMinutesAgo = new Date(Date.now() - 600_000).toISOString().replace(/\.\d+Z$/, 'Z');
  await k.ok(t, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [
    { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } },
    { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'default' }, spec: {
      replicas: 1, selector: { matchLabels: { app: 'web' } },
      template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'burn', image: 'busybox', resources: { requests: { cpu: '100m' } } }] } },
    } },
    ...PODS.map((name) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default', labels: { app: 'web' } },
      spec: { nodeName: 'n1', containers: [{ name: 'burn', image: 'busybox', resources: { requests: { cpu: '100m' } } }] } })),
  ] }));
  await k.ok(t, ['patch', 'node', 'n1', '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: {
    addresses: [{ type: 'InternalIP', address: hostIp }], daemonEndpoints: { kubeletEndpoint: { Port: agent.port } },
  } })]);
  for (const p of PODS) {
    await k.ok(t, ['patch', 'pod', p, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: {
      phase: 'Running', startTime: tenMinutesAgo, conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: tenMinutesAgo }],
    } })]);
  }
  const ms = await startMetricsServer({
    client, log: pino({ level: 'silent' }), agentTls: { insecure: true }, addressTypes: ['InternalIP'], resolutionMs: 1000,
    bindAddress: '0.0.0.0', port: 0, register: true, advertiseAddress: hostIp!,
  });
  t.teardown(() => ms.stop());

  // The controller, as the controller manager runs it, with short periods.
  const config = parseControllerManagerArgs([`--coreconfig=${a.coreconfigPath}`, '--horizontal-pod-autoscaler-sync-period=1s',
    '--horizontal-pod-autoscaler-downscale-delay=4s', '--horizontal-pod-autoscaler-upscale-delay=0s']).config;
  const ac = new AbortController();
  setMaxListeners(0, ac.signal);
  const informers = new SharedInformerFactory({ client, minResyncPeriodMs: 0 });
  const log = pino({ level: 'silent' });
  const running = new HorizontalPodAutoscalingController().run({ client, informers, config, log, signal: ac.signal, events: (c) => newEventRecorder(client, c, log) });
  t.teardown(async () => { ac.abort(); await running; await informers.stopped(); });

  await k.ok(t, ['autoscale', 'deployment', 'web', '--cpu-percent=50', '--min=1', '--max=5']);
  const scaled = await waitFor('the scale-out', async () => {
    const d = await client.get({ group: 'apps', version: 'v1', resource: 'deployments', namespace: 'default' }, 'web');
    return (d.spec as { replicas: number }).replicas > 1 ? (d.spec as { replicas: number }).replicas : undefined;
  }, 30_000);
  t.equal(scaled, 4, '200 % of a 50 % target on 2 ready pods asks for 8; one step is at most max(2×1, 4)');
  const hpa = await waitFor('kubectl get hpa with the current utilization', async () => {
    const r = await k.run(['get', 'hpa', 'web']);
    return /cpu: 200%\/50%/.test(r.stdout) ? r.stdout : undefined;
  }, 15_000);
  t.match(hpa, /^NAME\s+REFERENCE\s+TARGETS\s+MINPODS\s+MAXPODS\s+REPLICAS\s+AGE/m);
  t.match(hpa, /^web\s+Deployment\/web\s+cpu: 200%\/50%\s+1\s+5\s+/m, 'current/target, min and max');
  const v2 = await k.json(t, ['get', 'hpa.v2.autoscaling', 'web']);
  const cond = (type: string): { status: string; reason: string } => v2.status.conditions.find((c: { type: string }) => c.type === type);
  t.equal(cond('ScalingActive').reason, 'ValidMetricFound');
  // (The reference's --storage-versions store autoscaling/v1, which keeps only the utilization of CPU.)
  t.match(v2.status.currentMetrics, [{ type: 'Resource', resource: { name: 'cpu', current: { averageUtilization: 200 } } }]);
  const events = await waitFor('the SuccessfulRescale event', async () => {
    const r = await k.run(['get', 'events', '--field-selector=reason=SuccessfulRescale', '-o', 'jsonpath={.items[*].message}']);
    return r.stdout.includes('New size: 4') ? r.stdout : undefined;
  });
  t.match(events, /New size: 4; reason: cpu resource utilization \(percentage of request\) above target/);

  // The load stops: after the downscale stabilization the deployment goes back to the minimum.
  load.cores = 0.005;
  const back = await waitFor('the scale-in', async () => {
    const d = await client.get({ group: 'apps', version: 'v1', resource: 'deployments', namespace: 'default' }, 'web');
    return (d.spec as { replicas: number }).replicas === 1 ? true : undefined;
  }, 30_000);
  t.ok(back, 'scaled back to minReplicas');
  const after = await k.json(t, ['get', 'hpa.v2.autoscaling', 'web']);
  t.equal(after.status.desiredReplicas, 1);
  t.match(await k.ok(t, ['get', 'events', '--field-selector=reason=SuccessfulRescale', '-o', 'jsonpath={.items[*].message}']), /New size: 1; reason: All metrics below target/);
});
