/**
 * Nodes for the HA fault suite's cut-off case: in-process node agents with simulated
 * containers (one reaching the API servers through TcpCut relays), a controller manager
 * process running the node lifecycle controller with short periods, and readers of a node's
 * Ready condition and a pod's container.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeObject } from '../../src/api/resources/types.js';
import type { RestClient } from '../../src/client/rest-client.js';
import { parseNodeagentArgs } from '../../src/flags/nodeagent.js';
import { startNodeAgent, type NodeAgent } from '../../src/daemons/nodeagent/main.js';
import { CLI, track } from '../helpers/ha-cluster.js';

export const NODES = { group: '', version: 'v1', resource: 'nodes' };
export const PODS = { group: '', version: 'v1', resource: 'pods' };
export const GRACE_S = 8, EVICTION_S = 20;

export async function startFakeNode(name: string, coreconfig: string, root: string): Promise<NodeAgent> {
  const { config } = parseNodeagentArgs([
    '--container-runtime=fake', `--coreconfig=${coreconfig}`, `--hostname-override=${name}`, `--root-dir=${root}`,
    `--cert-dir=${join(root, 'pki')}`, '--port=0', '--read-only-port=0', '--healthz-port=0', '--fail-swap-on=false',
    '--address=127.0.0.1', '--node-status-update-frequency=1s', '--resolv-conf=', '--event-qps=0', '--core-api-qps=50', '--core-api-burst=100',
  ]);
  return startNodeAgent(config, { podLogDir: join(root, 'logs'), relistPeriodMs: 200, leaseRenewIntervalMs: 1000, skipProcessTweaks: true });
}

/** A controller manager with the node lifecycle controller only, grace GRACE_S, eviction after EVICTION_S. */
export function startNodeLifecycle(coreconfig: string, logFile?: number): ChildProcess {
  return track(spawn(process.execPath, [
    '--input-type=module', '-e', `const m = await import(${JSON.stringify('file://' + CLI)}); process.exitCode = await m.main(process.argv);`,
    'corectl', 'controller-manager', `--coreconfig=${coreconfig}`, '--port=0', '--leader-elect=false', '--controllers=nodelifecycle',
    `--node-monitor-grace-period=${GRACE_S}s`, '--node-monitor-period=1s', `--node-startup-grace-period=${GRACE_S}s`, `--pod-eviction-timeout=${EVICTION_S}s`,
  ], { stdio: ['ignore', logFile ?? 'ignore', logFile ?? 'ignore'], env: { ...process.env, NODE_OPTIONS: '' } }));
}

/** A coreconfig naming these servers (comma-separated), with the admin credentials of `template`'s text. */
export async function coreconfigVia(path: string, template: string, servers: string[]): Promise<string> {
  await writeFile(path, template.replace(/server: .*/, `server: ${servers.join(',')}`), { mode: 0o600 });
  return path;
}

export async function readyStatus(client: RestClient, node: string): Promise<string | undefined> {
  const n = await client.get(NODES, node);
  return ((n.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? []).find((c) => c.type === 'Ready')?.status;
}

export function podManifest(name: string, node: string): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Pod', metadata: { name },
    spec: { nodeName: node, terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent' }] },
  };
}

/** The running container's id and restart count, when the pod reports one running. */
export function runningContainer(pod: KubeObject): { id: string; restarts: number } | undefined {
  const cs = (pod.status as { containerStatuses?: { containerID?: string; restartCount?: number; state?: { running?: unknown } }[] } | undefined)?.containerStatuses?.[0];
  return cs?.state?.running && cs.containerID ? { id: cs.containerID, restarts: cs.restartCount ?? 0 } : undefined;
}
