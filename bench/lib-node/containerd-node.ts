/**
 * A one-node cluster for the pod-start bench, every part a real process: a private containerd
 * (test/helpers/containerd.ts, offline busybox images), `corectl apiserver` on LevelDB in a temp
 * dir, and `corectl nodeagent --container-runtime=remote` on that containerd (started, and
 * restarted with other options, by `startAgent`). Each part registers its own cleanup with the
 * Teardown as soon as it exists, so an interrupt at any point leaves no containers, shims,
 * mounts, bridge or temp dirs behind. The agent does not remove pod log directories (Kubernetes
 * does), so those of the bench namespace under /var/log/pods are removed here too.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RestClient } from '../../src/client/rest-client.js';
import type { Http2Transport } from '../../src/client/transport.js';
import { CriRuntime } from '../../src/daemons/nodeagent/runtime/cri/cri-runtime.js';
import { startContainerd, type StartedContainerd } from '../../test/helpers/containerd.js';
import { spawnDaemon, until, type Daemon } from '../lib-cluster/processes.js';
import type { Teardown } from './teardown.js';
import { startBenchApiserver } from './bench-apiserver.js';

const POD_LOG_ROOT = '/var/log/pods';

export interface ContainerdNodeOptions {
  readonly cliFile: string;
  readonly nodeName: string;
  /** Namespace the bench creates its pods in (its /var/log/pods/<ns>_* dirs are removed at the end). */
  readonly namespace: string;
  /** Node options for the agent process, e.g. ['--cpu-prof', '--cpu-prof-dir=/tmp/p']. */
  readonly agentNodeArgs?: readonly string[];
  readonly verbose?: boolean;
}

export interface ContainerdNode {
  readonly dir: string;
  readonly containerd: StartedContainerd;
  readonly apiserver: Daemon;
  /** The node agent started last, if any. */
  agent(): Daemon | undefined;
  /** Admin client (unlimited rate, JSON). */
  readonly client: RestClient;
  /** Raw transport of the admin connection (for /metrics). */
  readonly transport: Http2Transport;
  /** CRI client on the private containerd, for checking what runs. */
  readonly cri: CriRuntime;
  /** (Re)starts the node agent with these extra options (stopping the previous one) and waits for Ready. */
  startAgent(extraArgs: readonly string[]): Promise<Daemon>;
}

export async function startContainerdNode(o: ContainerdNodeOptions, teardown: Teardown): Promise<ContainerdNode> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-bench-podstart-'));
  teardown.add('temp dir', () => rm(dir, { recursive: true, force: true }));
  teardown.add('pod log dirs', async () => {
    const names = await readdir(POD_LOG_ROOT).catch(() => [] as string[]);
    await Promise.all(names.filter((n) => n.startsWith(`${o.namespace}_`)).map((n) => rm(join(POD_LOG_ROOT, n), { recursive: true, force: true })));
  });

  const containerd = await startContainerd();
  // Runs after the agent is stopped (cleanups run in reverse): removes every sandbox, the shims,
  // mounts, the bridge and containerd's dir.
  teardown.add('containerd', () => containerd.stop());
  const cri = new CriRuntime({ endpoint: containerd.endpoint, requestTimeoutMs: 15_000 });
  teardown.add('cri client', () => cri.close());

  const verbose = o.verbose ?? false;
  const { daemon: apiserver, nodeCfg: agentCfg, transport, client } = await startBenchApiserver({ cliFile: o.cliFile, dir, nodeUser: `system:node:${o.nodeName}`, verbose, maxRetries: 3 }, teardown);

  let agent: Daemon | undefined;
  const startAgent = async (extra: readonly string[]): Promise<Daemon> => {
    await agent?.stop();
    const a = spawnDaemon(o.cliFile, 'nodeagent', [
      '--container-runtime=remote', `--container-runtime-endpoint=${containerd.endpoint}`, `--coreconfig=${agentCfg}`,
      `--hostname-override=${o.nodeName}`, `--root-dir=${join(dir, 'agent-root')}`, `--cert-dir=${join(dir, 'agent-pki')}`,
      '--address=127.0.0.1', '--port=0', '--read-only-port=0', '--healthz-port=0', '--fail-swap-on=false', '--resolv-conf=',
      ...extra,
    ], { verbose, nodeArgs: [...(o.agentNodeArgs ?? [])] });
    agent = a;
    // Ready with a heartbeat from this process (not a Ready left over from an earlier agent).
    const since = Math.floor(Date.now() / 1000) * 1000;
    await until(`node ${o.nodeName} Ready`, async () => {
      const n = await client.get({ group: '', version: 'v1', resource: 'nodes' }, o.nodeName) as { status?: { conditions?: Array<{ type?: string; status?: string; lastHeartbeatTime?: string }> } };
      return (n.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True' && Date.parse(c.lastHeartbeatTime ?? '') >= since) ? true : undefined;
    }, 60_000, [apiserver, a]);
    return a;
  };
  // Registered after containerd, so it runs before containerd.stop().
  teardown.add('nodeagent', () => agent?.stop());
  return { dir, containerd, apiserver, client, transport, cri, startAgent, agent: () => agent };
}
