/**
 * Service environment variables as Kubernetes' node agent makes them (pkg/kubelet/envvars and
 * the documented format, e.g. REDIS_PRIMARY_* in the Service concept page), their precedence
 * under the container's own env, enableServiceLinks, and a pod on the fake runtime against a
 * real API server getting them.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { containerEnv } from '../../src/daemons/nodeagent/env.js';
import { startNodeAgent } from '../../src/daemons/nodeagent/main.js';
import type { Pod } from '../../src/daemons/nodeagent/pod-types.js';
import { podServiceEnv } from '../../src/daemons/nodeagent/service-env.js';
import { parseNodeagentArgs } from '../../src/flags/nodeagent.js';
import { startApiserver } from '../helpers/apiserver.js';
import { waitFor } from '../helpers/wait-for.js';

const svc = (namespace: string, name: string, clusterIP: string, ports: Array<{ name?: string; port: number; protocol?: string }>): KubeObject =>
  ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace }, spec: { clusterIP, ports } });

const SERVICES = [
  svc('default', 'kubernetes', '10.0.0.1', [{ name: 'https', port: 443, protocol: 'TCP' }]),
  svc('app', 'redis-primary', '10.0.0.11', [{ port: 6379, protocol: 'TCP' }]),
  svc('app', 'web', '10.0.0.12', [{ name: 'http', port: 80, protocol: 'TCP' }, { name: 'dns-udp', port: 53, protocol: 'UDP' }]),
  svc('app', 'headless', 'None', [{ name: 'x', port: 1 }]),
  svc('other', 'elsewhere', '10.0.0.13', [{ port: 1 }]),
];

const pod = (namespace: string, enableServiceLinks?: boolean): Pod => ({
  metadata: { name: 'p', namespace }, spec: { containers: [{ name: 'c' }], ...(enableServiceLinks === undefined ? {} : { enableServiceLinks }) },
} as Pod);

const EXPECTED_APP = [
  ['KUBERNETES_SERVICE_HOST', '10.0.0.1'], ['KUBERNETES_SERVICE_PORT', '443'], ['KUBERNETES_SERVICE_PORT_HTTPS', '443'],
  ['KUBERNETES_PORT', 'tcp://10.0.0.1:443'], ['KUBERNETES_PORT_443_TCP', 'tcp://10.0.0.1:443'], ['KUBERNETES_PORT_443_TCP_PROTO', 'tcp'],
  ['KUBERNETES_PORT_443_TCP_PORT', '443'], ['KUBERNETES_PORT_443_TCP_ADDR', '10.0.0.1'],
  // The documented example, word for word.
  ['REDIS_PRIMARY_SERVICE_HOST', '10.0.0.11'], ['REDIS_PRIMARY_SERVICE_PORT', '6379'], ['REDIS_PRIMARY_PORT', 'tcp://10.0.0.11:6379'],
  ['REDIS_PRIMARY_PORT_6379_TCP', 'tcp://10.0.0.11:6379'], ['REDIS_PRIMARY_PORT_6379_TCP_PROTO', 'tcp'], ['REDIS_PRIMARY_PORT_6379_TCP_PORT', '6379'],
  ['REDIS_PRIMARY_PORT_6379_TCP_ADDR', '10.0.0.11'],
  ['WEB_SERVICE_HOST', '10.0.0.12'], ['WEB_SERVICE_PORT', '80'], ['WEB_SERVICE_PORT_HTTP', '80'], ['WEB_SERVICE_PORT_DNS_UDP', '53'],
  ['WEB_PORT', 'tcp://10.0.0.12:80'],
  ['WEB_PORT_80_TCP', 'tcp://10.0.0.12:80'], ['WEB_PORT_80_TCP_PROTO', 'tcp'], ['WEB_PORT_80_TCP_PORT', '80'], ['WEB_PORT_80_TCP_ADDR', '10.0.0.12'],
  ['WEB_PORT_53_UDP', 'udp://10.0.0.12:53'], ['WEB_PORT_53_UDP_PROTO', 'udp'], ['WEB_PORT_53_UDP_PORT', '53'], ['WEB_PORT_53_UDP_ADDR', '10.0.0.12'],
];

t.test('two services of the pod\'s namespace and the API server\'s, as kubelet writes them', async (t) => {
  t.same([...podServiceEnv(pod('app'), SERVICES)], EXPECTED_APP);
  t.same([...podServiceEnv(pod('app', false), SERVICES)], EXPECTED_APP.slice(0, 8), 'enableServiceLinks false: the kubernetes service only');
  const v6 = podServiceEnv(pod('v6'), [svc('v6', 'six', 'fd00::6', [{ port: 80 }])]);
  t.equal(v6.get('SIX_PORT'), 'tcp://[fd00::6]:80', 'IPv6 in brackets');
  t.equal(v6.get('SIX_PORT_80_TCP_ADDR'), 'fd00::6');
  const own = podServiceEnv(pod('mine'), [SERVICES[0] as KubeObject, svc('mine', 'kubernetes', '10.0.0.99', [{ port: 8443 }])]);
  t.equal(own.get('KUBERNETES_SERVICE_HOST'), '10.0.0.99', 'a kubernetes service in the pod\'s namespace wins over the default one');
});

t.test('the container\'s own env wins, and may refer to service variables', async (t) => {
  const p = pod('app');
  const c = { name: 'c', env: [{ name: 'WEB_SERVICE_HOST', value: 'mine' }, { name: 'URL', value: 'http://$(WEB_SERVICE_HOST):$(WEB_SERVICE_PORT)' }] };
  const reader = { configMap: async () => undefined, secret: async () => undefined };
  const env = await containerEnv(p, c, { reader, allocatable: {}, podIp: '', hostIp: '', serviceEnv: podServiceEnv(p, SERVICES) });
  t.equal(env.get('WEB_SERVICE_HOST'), 'mine');
  t.equal(env.get('URL'), 'http://mine:80');
  t.same([...env.keys()].slice(0, 2), ['WEB_SERVICE_HOST', 'URL'], 'the container\'s variables first, then the services\'');
  t.equal(env.get('KUBERNETES_SERVICE_HOST'), '10.0.0.1');
});

t.test('a pod on the node agent gets them from the API', async (t) => {
  const api = await startApiserver();
  const dir = await mkdtemp(join(tmpdir(), 'corectl-svc-env-'));
  const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
  const core = (resource: string, namespace?: string): { group: string; version: string; resource: string; namespace?: string } => ({ group: '', version: 'v1', resource, ...(namespace ? { namespace } : {}) });
  await client.create(core('namespaces'), { metadata: { name: 'app' } });
  for (const s of SERVICES.slice(1)) {
    const ns = s.metadata?.namespace ?? '';
    if (ns !== 'app') await client.create(core('namespaces'), { metadata: { name: ns } }).catch(() => undefined);
    await client.create(core('services', ns), s);
  }
  const { config } = parseNodeagentArgs([
    '--container-runtime=fake', `--coreconfig=${api.coreconfigPath}`, '--hostname-override=node-e', `--root-dir=${join(dir, 'root')}`,
    `--cert-dir=${join(dir, 'pki')}`, '--port=0', '--read-only-port=0', '--healthz-port=0', '--fail-swap-on=false', '--address=127.0.0.1',
    '--resolv-conf=', '--event-qps=0', '--enable-server=false',
  ]);
  const agent = await startNodeAgent(config, { podLogDir: join(dir, 'logs'), relistPeriodMs: 100, skipProcessTweaks: true });
  t.teardown(async () => {
    await agent.stop({ stopPods: true });
    client.close();
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });
  // The API server makes its `kubernetes` service shortly after it starts.
  await waitFor('the kubernetes service', () => client.get(core('services', 'default'), 'kubernetes'));
  await client.create(core('pods', 'app'), { metadata: { name: 'client' }, spec: { nodeName: 'node-e', containers: [{ name: 'c', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent' }] } });
  const p = await waitFor('pod running', async () => { const x = await client.get<Pod>(core('pods', 'app'), 'client'); return x.status?.phase === 'Running' ? x : undefined; });
  const id = (p.status?.containerStatuses?.[0]?.containerID ?? '').replace('fake://', '');
  const env = (await agent.runtime.execSync(id, ['env'], 5)).stdout.toString();
  t.match(env, /\nWEB_SERVICE_HOST=10\.0\.0\.12\n/, 'a service of the pod\'s namespace');
  t.match(env, /\nREDIS_PRIMARY_PORT_6379_TCP=tcp:\/\/10\.0\.0\.11:6379\n/);
  t.notMatch(env, /ELSEWHERE_/, 'none of another namespace');
  t.notMatch(env, /HEADLESS_/, 'none of a headless service');
  t.match(env, /(^|\n)KUBERNETES_SERVICE_HOST=10\.0\.0\.1\n/, 'the API server\'s service (the API server made it)');
  t.match(env, /\nKUBERNETES_SERVICE_PORT=\d+\n/);
});
