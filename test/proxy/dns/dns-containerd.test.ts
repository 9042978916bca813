/**
 * The cluster DNS from inside a pod on a private containerd (skipped unless root with
 * containerd): the node agent's --cluster-dns names the CNI bridge's gateway, where the DNS
 * listens on port 53 (no service proxy here to route 10.0.0.10); a busybox pod with the default
 * dnsPolicy (ClusterFirst) gets Kubernetes' resolv.conf, and resolves kubernetes.default
 * (the C library, through the search path), `nslookup kubernetes` and full names, and a
 * headless StatefulSet-style name. A pod with hostname and subdomain finds its FQDN in the
 * managed /etc/hosts. A pod with dnsPolicy Default gets the host's resolvers.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { loadCoreconfig } from '../../../src/client/coreconfig.js';
import { RestClient } from '../../../src/client/rest-client.js';
import { startClusterDns, type ClusterDns } from '../../../src/daemons/proxy/dns/cluster-dns.js';
import { parseNodeagentArgs } from '../../../src/flags/nodeagent.js';
import { startNodeAgent, type NodeAgent } from '../../../src/daemons/nodeagent/main.js';
import type { Pod } from '../../../src/daemons/nodeagent/pod-types.js';
import { startApiserver } from '../../helpers/apiserver.js';
import { containerdSkipReason, startContainerd } from '../../helpers/containerd.js';
import { waitFor } from '../../helpers/wait-for.js';

const skip = containerdSkipReason();
if (skip) t.plan(0, `containerd: ${skip}`);
else t.test('cluster DNS in pods on containerd', main);

async function main(t: Test): Promise<void> {
  const containerd = await startContainerd();
  const api = await startApiserver();
  const dir = await mkdtemp(join(tmpdir(), 'corectl-dns-cd-'));
  const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
  const gateway = containerd.subnet.replace(/\.0\/24$/, '.1');
  let agent: NodeAgent | undefined;
  let dns: ClusterDns | undefined;
  t.teardown(async () => {
    await dns?.stop();
    await agent?.stop({ stopPods: true }).catch(() => undefined);
    client.close();
    await api.stop();
    await containerd.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const { config } = parseNodeagentArgs([
    '--container-runtime=remote', `--container-runtime-endpoint=${containerd.endpoint}`, `--coreconfig=${api.coreconfigPath}`,
    '--hostname-override=dns-node', `--root-dir=${join(dir, 'root')}`, `--cert-dir=${join(dir, 'pki')}`, '--port=0', '--read-only-port=0',
    '--healthz-port=0', '--fail-swap-on=false', '--address=127.0.0.1', '--event-qps=0',
    `--cluster-dns=${gateway}`, '--cluster-domain=cluster.local',
  ]);
  agent = await startNodeAgent(config, { podLogDir: join(dir, 'logs'), relistPeriodMs: 200, skipProcessTweaks: true, backoff: { initialMs: 1000, maxMs: 2000, resetMs: 600_000 } });
  const a = agent;
  const core = (resource: string, namespace = 'default'): { group: string; version: string; resource: string; namespace: string } => ({ group: '', version: 'v1', resource, namespace });
  const runPod = async (name: string, spec: Record<string, unknown> = {}): Promise<string> => {
    await client.create(core('pods'), { metadata: { name }, spec: { nodeName: 'dns-node', containers: [{ name: 'c', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }], ...spec } });
    const p = await waitFor(`${name} running`, async () => { const x = await client.get<Pod>(core('pods'), name); return x.status?.phase === 'Running' ? x : undefined; }, 60_000);
    return (p.status?.containerStatuses?.[0]?.containerID ?? '').replace(/^containerd:\/\//, '');
  };
  const sh = async (id: string, cmd: string): Promise<{ code: number; out: string }> => {
    const r = await a.runtime.execSync(id, ['sh', '-c', cmd], 20);
    return { code: r.exitCode, out: r.stdout.toString() + r.stderr.toString() };
  };

  // The bridge (and its gateway address) exists once the first pod has its network.
  const id = await runPod('client');
  dns = await startClusterDns({ client, listen: [{ host: gateway, port: 53 }], clusterDomain: 'cluster.local' });
  t.ok(await dns.synced(), 'DNS caches synced');
  await waitFor('the kubernetes service', () => client.get(core('services'), 'kubernetes'));
  await client.create(core('services'), { metadata: { name: 'db' }, spec: { clusterIP: 'None', ports: [{ name: 'pg', port: 5432 }] } });
  await client.create({ group: 'discovery.k8s.io', version: 'v1', resource: 'endpointslices', namespace: 'default' }, {
    metadata: { name: 'db-x', labels: { 'kubernetes.io/service-name': 'db' } }, addressType: 'IPv4',
    endpoints: [{ addresses: ['10.244.9.7'], hostname: 'db-0', conditions: { ready: true } }], ports: [{ name: 'pg', port: 5432, protocol: 'TCP' }],
  });

  t.test('ClusterFirst: Kubernetes\' resolv.conf', async (t) => {
    const conf = (await sh(id, 'cat /etc/resolv.conf')).out;
    t.match(conf, new RegExp(`nameserver ${gateway.replace(/\./g, '\\.')}\\n`));
    t.match(conf, /search default\.svc\.cluster\.local svc\.cluster\.local cluster\.local/);
    t.match(conf, /options ndots:5/);
  });

  t.test('names resolve in the pod: nslookup, and the C library through the search path', async (t) => {
    // busybox >= 1.29's nslookup applies search domains to dotless names only (no ndots), so
    // its `nslookup kubernetes.default` asks for kubernetes.default. itself, which is
    // NXDOMAIN on Kubernetes with CoreDNS as well (hence the docs' busybox:1.28). The C
    // library's resolver (ping, wget) follows ndots:5 and the search path.
    // It exits 1 there: the other search domains' answers are NXDOMAIN.
    const short = await waitFor('nslookup kubernetes', async () => { const x = await sh(id, 'nslookup kubernetes'); return /10\.0\.0\.1/.test(x.out) ? x : undefined; }, 30_000)
      .catch(async () => sh(id, 'nslookup kubernetes'));
    t.match(short.out, /Name:\s+kubernetes\.default\.svc\.cluster\.local\s+Address:\s+10\.0\.0\.1/, `nslookup kubernetes: through the search path (${short.out})`);
    const full = await sh(id, 'nslookup kubernetes.default.svc.cluster.local');
    t.equal(full.code, 0, full.out);
    t.match(full.out, /Address:\s+10\.0\.0\.1/, 'the full name: the ClusterIP');
    const libc = await sh(id, 'ping -c 1 -W 1 kubernetes.default 2>&1; true');
    t.match(libc.out, /PING kubernetes\.default \(10\.0\.0\.1\)/, `ping kubernetes.default: the C library's resolver, search path and ndots (${libc.out})`);
    const sts = await sh(id, 'nslookup db-0.db.default.svc.cluster.local');
    t.match(sts.out, /Address:\s+10\.244\.9\.7/, `a StatefulSet pod's stable name (${sts.out})`);
    const nx = await sh(id, 'nslookup nope.default.svc.cluster.local');
    t.not(nx.code, 0, 'an unknown service fails');
    t.match(nx.out, /NXDOMAIN/);
    const dotted = await sh(id, 'nslookup kubernetes.default');
    t.comment(`busybox nslookup kubernetes.default: ${dotted.out.replace(/\s+/g, ' ')}`);
  });

  t.test('a pod with hostname and subdomain knows its FQDN (/etc/hosts)', async (t) => {
    const sts = await runPod('web-0', { hostname: 'web-0', subdomain: 'nginx', hostAliases: [{ ip: '10.9.9.9', hostnames: ['alias.local'] }] });
    const hosts = (await sh(sts, 'cat /etc/hosts')).out;
    t.match(hosts, /^# Kubernetes-managed hosts file\.\n127\.0\.0\.1\tlocalhost\n/);
    t.match(hosts, /\n10\.88\.\d+\.\d+\tweb-0\.nginx\.default\.svc\.cluster\.local\tweb-0\n/);
    t.match(hosts, /# Entries added by HostAliases\.\n10\.9\.9\.9\talias\.local\n/);
    t.equal((await sh(sts, 'hostname -f')).out.trim(), 'web-0.nginx.default.svc.cluster.local', 'hostname -f');
    t.match((await sh(sts, 'ping -c 1 -W 1 localhost 2>&1; true')).out, /PING localhost \(127\.0\.0\.1\)/, 'localhost from the file');
  });

  t.test('Default: the host\'s resolvers', async (t) => {
    const other = await runPod('hostdns', { dnsPolicy: 'Default' });
    const conf = (await sh(other, 'cat /etc/resolv.conf')).out;
    t.notMatch(conf, new RegExp(`nameserver ${gateway.replace(/\./g, '\\.')}\\b`));
    t.notMatch(conf, /svc\.cluster\.local/);
  });
}
