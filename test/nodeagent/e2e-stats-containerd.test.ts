/**
 * The Summary API and resource metrics on a private containerd, read as users read them:
 * `kubectl get --raw /api/v1/nodes/<node>/proxy/stats/summary` through the API server's node
 * proxy (skipped unless root with containerd and kubectl installed). A pod that burns CPU shows
 * a CPU rate and a growing CPU counter, an idle one does not; memory, network, the emptyDir
 * volume's bytes and the node figures are there; /metrics/resource has kubelet's series.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { parseNodeagentArgs } from '../../src/flags/nodeagent.js';
import { startNodeAgent, type NodeAgent } from '../../src/daemons/nodeagent/main.js';
import type { Pod } from '../../src/daemons/nodeagent/pod-types.js';
import { createCA, issueCert, writePemFile } from '../../src/util/pki.js';
import { startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { containerdSkipReason, startContainerd, type StartedContainerd } from '../helpers/containerd.js';
import { kubectl } from '../helpers/kubectl.js';
import { kubectlRunner } from '../helpers/kubectl-run.js';
import { waitFor } from '../helpers/wait-for.js';

const skip = containerdSkipReason();
const bin = kubectl(33) ?? kubectl(27);
if (skip || !bin) {
  t.plan(0, skip ? `containerd: ${skip}` : 'no kubectl.1.33 or kubectl.1.27');
} else {
  await main(bin);
}

interface PodStats {
  podRef: { name: string; namespace: string; uid: string };
  containers: { name: string; cpu?: { usageNanoCores?: number; usageCoreNanoSeconds?: number }; memory?: { workingSetBytes?: number; usageBytes?: number; rssBytes?: number }; rootfs?: { usedBytes?: number }; logs?: { usedBytes?: number } }[];
  cpu?: { usageNanoCores?: number; usageCoreNanoSeconds?: number };
  memory?: { workingSetBytes?: number };
  network?: { name: string; rxBytes: number; txBytes: number };
  volume?: { name: string; usedBytes?: number }[];
  'ephemeral-storage'?: { usedBytes?: number };
}
interface SummaryDoc { node: { nodeName: string; cpu?: { usageCoreNanoSeconds?: number; usageNanoCores?: number }; memory?: { workingSetBytes?: number; availableBytes?: number }; fs?: { capacityBytes?: number }; runtime?: { imageFs?: { usedBytes?: number } }; rlimit?: { maxpid?: number } }; pods: PodStats[] }

async function main(kubectlBin: string): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-stats-e2e-'));
  let containerd: StartedContainerd | undefined;
  let api: StartedApiserver | undefined;
  let agent: NodeAgent | undefined;
  let client: RestClient | undefined;
  t.teardown(async () => {
    await agent?.stop({ stopPods: true }).catch(() => undefined);
    client?.close();
    await api?.stop();
    await containerd?.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const file = (n: string): string => join(dir, n);
  const nodeCa = await createCA({ commonName: 'node-ca' });
  const apiClient = await issueCert({ ca: nodeCa, commonName: 'kube-apiserver-kubelet-client', organizations: ['system:masters'], usages: 'client' });
  const serving = await issueCert({ ca: nodeCa, commonName: 'stats-node', dnsNames: ['stats-node', 'localhost'], ips: ['127.0.0.1'], usages: 'server' });
  await Promise.all([
    writePemFile(file('ca.crt'), nodeCa.certPem), writePemFile(file('client.crt'), apiClient.certPem), writePemFile(file('client.key'), apiClient.keyPem),
    writePemFile(file('serving.crt'), serving.certPem), writePemFile(file('serving.key'), serving.keyPem),
  ]);
  containerd = await startContainerd();
  api = await startApiserver({
    args: [
      `--nodeagent-client-certificate=${file('client.crt')}`, `--nodeagent-client-key=${file('client.key')}`,
      `--nodeagent-certificate-authority=${file('ca.crt')}`, '--nodeagent-preferred-address-types=InternalIP',
      '--nodeagent-allow-loopback=true',
    ],
  });
  client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
  const { config } = parseNodeagentArgs([
    '--container-runtime=remote', `--container-runtime-endpoint=${containerd.endpoint}`, `--coreconfig=${api.coreconfigPath}`,
    '--hostname-override=stats-node', `--root-dir=${file('root')}`, `--cert-dir=${file('pki')}`, '--port=0', '--read-only-port=0',
    '--healthz-port=0', '--fail-swap-on=false', '--address=127.0.0.1', '--node-ip=127.0.0.1', '--resolv-conf=', '--event-qps=0',
    `--client-ca-file=${file('ca.crt')}`, `--tls-cert-file=${file('serving.crt')}`, `--tls-private-key-file=${file('serving.key')}`,
    '--anonymous-auth=false', '--volume-stats-agg-period=1s',
  ]);
  agent = await startNodeAgent(config, { podLogDir: file('logs'), relistPeriodMs: 200, skipProcessTweaks: true, statsPeriodMs: 1000 });
  const PODS = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
  const pod = (name: string, script: string): KubeObject => ({
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default' },
    spec: {
      nodeName: 'stats-node', terminationGracePeriodSeconds: 1, volumes: [{ name: 'scratch', emptyDir: {} }],
      containers: [{ name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', script], volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] }],
    },
  });
  // The burner writes 2 MiB into its emptyDir, then spins.
  await client.create(PODS, pod('burner', 'dd if=/dev/zero of=/scratch/blob bs=1024 count=2048 2>/dev/null; while :; do :; done'));
  await client.create(PODS, pod('idle', 'sleep 3600'));
  for (const name of ['burner', 'idle']) await waitFor(`${name} running`, async () => (await client!.get<Pod>(PODS, name)).status?.phase === 'Running', 60_000);

  const kc = kubectlRunner(kubectlBin, api.coreconfigPath, file('kube-cache'));
  const summary = async (): Promise<SummaryDoc> => {
    const r = await kc.run(['get', '--raw', '/api/v1/nodes/stats-node/proxy/stats/summary']);
    if (r.code !== 0) throw new Error(`kubectl get --raw: ${r.stderr}`);
    return JSON.parse(r.stdout) as SummaryDoc;
  };
  const podOf = (s: SummaryDoc, name: string): PodStats | undefined => s.pods.find((p) => p.podRef.name === name);

  t.test('stats/summary through the node proxy: per-pod CPU moves for the pod that burns CPU', async (t) => {
    const first = await waitFor('a CPU rate for the burner', async () => {
      const s = await summary();
      return (podOf(s, 'burner')?.cpu?.usageNanoCores ?? 0) > 0 ? s : undefined;
    }, 60_000);
    const burner = podOf(first, 'burner')!;
    t.equal(burner.podRef.namespace, 'default');
    t.match(burner.podRef.uid, /^[0-9a-f-]{36}$/);
    t.equal(burner.containers[0]?.name, 'main');
    // A busy loop uses a good part of a core; an idle pod next to nothing.
    t.ok((burner.cpu?.usageNanoCores ?? 0) > 100_000_000, `burner uses > 0.1 core (${burner.cpu?.usageNanoCores})`);
    const later = await waitFor('the burner\'s CPU counter grows', async () => {
      const s = await summary();
      return (podOf(s, 'burner')?.cpu?.usageCoreNanoSeconds ?? 0) > (burner.cpu?.usageCoreNanoSeconds ?? 0) + 100_000_000 ? s : undefined;
    }, 30_000);
    const idle = podOf(later, 'idle');
    t.ok(idle, 'the idle pod is listed');
    t.ok((idle?.cpu?.usageNanoCores ?? 0) < (podOf(later, 'burner')?.cpu?.usageNanoCores ?? 0) / 10, 'the idle pod uses far less');
    const c = podOf(later, 'burner')!.containers[0]!;
    t.ok((c.memory?.workingSetBytes ?? 0) > 0, 'container working set');
    t.ok((c.memory?.usageBytes ?? 0) > 0, 'container memory usage (cgroup)');
    t.ok(c.rootfs, 'container rootfs');
    t.ok(podOf(later, 'burner')!.network?.name, 'pod network from its namespace');
    t.ok((later.node.cpu?.usageCoreNanoSeconds ?? 0) > 0, 'node CPU');
    t.ok((later.node.memory?.workingSetBytes ?? 0) > 0, 'node memory');
    t.ok((later.node.fs?.capacityBytes ?? 0) > 0, 'node fs');
    t.ok((later.node.rlimit?.maxpid ?? 0) > 0, 'node rlimit');
    const vol = await waitFor('the emptyDir volume has the 2 MiB', async () => {
      const v = podOf(await summary(), 'burner')?.volume?.find((x) => x.name === 'scratch');
      return (v?.usedBytes ?? 0) >= 2 * 1024 * 1024 ? v : undefined;
    }, 30_000);
    t.ok(vol);
  });

  t.test('metrics/resource has kubelet\'s series for the pods', async (t) => {
    const r = await kc.run(['get', '--raw', '/api/v1/nodes/stats-node/proxy/metrics/resource']);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /^node_cpu_usage_seconds_total [\d.e+]+ \d+$/m);
    t.match(r.stdout, /^node_memory_working_set_bytes \d+ \d+$/m);
    t.match(r.stdout, /^pod_cpu_usage_seconds_total\{namespace="default",pod="burner"\} [\d.e+]+ \d+$/m);
    t.match(r.stdout, /^pod_memory_working_set_bytes\{namespace="default",pod="burner"\} \d+ \d+$/m);
    t.match(r.stdout, /^container_cpu_usage_seconds_total\{container="main",namespace="default",pod="burner"\} [\d.e+]+ \d+$/m);
    t.match(r.stdout, /^container_memory_working_set_bytes\{container="main",namespace="default",pod="idle"\} \d+ \d+$/m);
    t.match(r.stdout, /^resource_scrape_error 0$/m);
    const cad = await kc.run(['get', '--raw', '/api/v1/nodes/stats-node/proxy/metrics/cadvisor']);
    t.equal(cad.code, 0, cad.stderr);
    t.match(cad.stdout, /^container_memory_rss\{container="main",.*pod="burner"\} \d+/m);
    t.match(cad.stdout, /^container_network_receive_bytes_total\{container="POD",.*interface="eth0",.*pod="burner"\} \d+/m);
  });
}
