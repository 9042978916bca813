/**
 * Controller managers and schedulers as separate processes (standing in for machines) that
 * campaign for their Lease in kube-system, for the HA fault suite; and the Lease as seen
 * through the API.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { RestClient } from '../../src/client/rest-client.js';
import { CLI, track } from '../helpers/ha-cluster.js';

export const LEASE_MS = 4000, RENEW_MS = 3000, RETRY_MS = 500;

export interface Candidate { child: ChildProcess; identity: Promise<string>; exited: Promise<void> }

export function startCandidate(daemon: 'controller-manager' | 'scheduler', coreconfig: string): Candidate {
  const child = track(spawn(process.execPath, [
    '--input-type=module', '-e', `const m = await import(${JSON.stringify('file://' + CLI)}); process.exitCode = await m.main(process.argv);`,
    'corectl', daemon, `--coreconfig=${coreconfig}`, '--port=0',
    ...(daemon === 'controller-manager' ? ['--controllers=replicaset'] : []),
    '--leader-elect=true', '--leader-elect-resource-lock=leases', `--leader-elect-lease-duration=${LEASE_MS}ms`,
    `--leader-elect-renew-deadline=${RENEW_MS}ms`, `--leader-elect-retry-period=${RETRY_MS}ms`,
  ], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } }));
  const identity = new Promise<string>((resolve) => {
    let buf = '';
    child.stderr!.on('data', (d: Buffer) => {
      buf = (buf + d.toString()).slice(-20_000);
      const m = /"identity":"([^"]+)"/.exec(buf);
      if (m) resolve(m[1]!);
    });
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return { child, identity, exited };
}

export interface LeaseView { holder: string; acquire: number; renew: number; transitions: number }

export async function leaseOf(client: RestClient, name: string): Promise<LeaseView | undefined> {
  try {
    const l = await client.get({ group: 'coordination.k8s.io', version: 'v1', resource: 'leases', namespace: 'kube-system' }, name) as { spec: { holderIdentity?: string; acquireTime?: string; renewTime?: string; leaseTransitions?: number } };
    return { holder: l.spec.holderIdentity ?? '', acquire: Date.parse(l.spec.acquireTime ?? ''), renew: Date.parse(l.spec.renewTime ?? ''), transitions: l.spec.leaseTransitions ?? 0 };
  } catch { return undefined; }
}
