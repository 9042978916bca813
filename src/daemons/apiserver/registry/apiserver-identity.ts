/**
 * API server identity (Kubernetes' APIServerIdentity): each API server holds a Lease in
 * kube-system named apiserver-<hash>, labelled apiserver.kubernetes.io/identity=kube-apiserver
 * and kubernetes.io/hostname=<host>, renewed every 10 s with a one-hour duration; so
 * `kubectl -n kube-system get lease -l apiserver.kubernetes.io/identity=kube-apiserver`
 * lists the servers of the control plane. Leases that ran out (servers gone for an hour) are
 * deleted by whichever server looks (each checks every 10 minutes; a delete carries the
 * resourceVersion it saw, so a lease renewed meanwhile stays).
 *
 * Decision: Kubernetes hashes the host name alone; we hash host name and secure port, so API
 * servers sharing a host (an HA set-up on one machine, as `make up-ha`) keep a lease each. A
 * restarted server on the same host and port takes its lease over with a new holder identity.
 */
import { microTime } from '../../../api/meta/time.js';
import { createHash, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import { findResource } from '../../../api/resources/registry.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { ResourceRegistry } from './resource-registry.js';

export const IDENTITY_LABEL = 'apiserver.kubernetes.io/identity';
const LEASE_SECONDS = 3600;
const RENEW_MS = 10_000;
const GC_MS = 600_000;

/** RFC 4648 base32, lower case, no padding (the lease name's hash). */
function base32(b: Buffer): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  let out = '', bits = 0, value = 0;
  for (const byte of b) {
    value = (value << 8) | byte; bits += 8;
    while (bits >= 5) { out += alphabet[(value >>> (bits - 5)) & 31]; bits -= 5; }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return out;
}

export function identityLeaseName(host: string, port: number): string {
  return `apiserver-${base32(createHash('sha256').update(`${host}:${port}`).digest().subarray(0, 16))}`;
}

const CREATE_RACE_TRIES = 5;


export class ApiserverIdentity {
  readonly name: string;
  readonly holder: string;
  private readonly host = hostname();
  private timers: NodeJS.Timeout[] = [];

  constructor(private readonly o: { registry: ResourceRegistry; securePort: number; log: Logger; renewMs?: number }) {
    this.name = identityLeaseName(this.host, o.securePort);
    this.holder = `${this.name}_${randomUUID()}`;
  }

  private get leases() { return findResource('coordination.k8s.io', 'v1', 'leases')!; }

  async renew(now = new Date()): Promise<void> {
    // Another server of the same identity (same host and port, e.g. two starting at the same
    // moment) may create the lease between this one's read and its create: then the lease
    // exists and a later try updates it. (A store may refuse the create for a write still
    // being committed, which a read sees a moment later: hence a few tries, a little apart.)
    for (let attempt = 1; ; attempt++) {
      try {
        await this.renewOnce(now);
        return;
      } catch (e) {
        if (!isApiError(e, 'AlreadyExists') || attempt >= CREATE_RACE_TRIES) throw e;
        await new Promise((r) => setTimeout(r, 10 * attempt));
      }
    }
  }

  private async renewOnce(now: Date): Promise<void> {
    await this.o.registry.update(this.leases, 'kube-system', this.name, (cur) => {
      const o: KubeObject = cur ?? { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: this.name, namespace: 'kube-system' } };
      o.metadata = { ...(o.metadata ?? {}), labels: { ...(o.metadata?.labels ?? {}), [IDENTITY_LABEL]: 'kube-apiserver', 'kubernetes.io/hostname': this.host } };
      delete o.metadata.resourceVersion;
      o.spec = { holderIdentity: this.holder, leaseDurationSeconds: LEASE_SECONDS, renewTime: microTime(now.getTime()) };
      return o;
    }, { internal: true });
  }

  /** Deletes identity leases that ran out; returns their names. */
  async collect(now = Date.now()): Promise<string[]> {
    const { items } = await this.o.registry.list(this.leases, { namespace: 'kube-system' });
    const gone: string[] = [];
    for (const l of items) {
      if (l.metadata?.labels?.[IDENTITY_LABEL] !== 'kube-apiserver' || l.metadata.name === this.name) continue;
      const spec = (l.spec ?? {}) as { renewTime?: string; leaseDurationSeconds?: number };
      const renewed = Date.parse(spec.renewTime ?? '');
      if (!Number.isFinite(renewed) || renewed + (spec.leaseDurationSeconds ?? LEASE_SECONDS) * 1000 > now) continue;
      try {
        await this.o.registry.delete(this.leases, 'kube-system', l.metadata.name!, { preconditions: { resourceVersion: l.metadata.resourceVersion! }, internal: true });
        gone.push(l.metadata.name!);
      } catch (e) {
        if (!isApiError(e, 'NotFound') && !isApiError(e, 'Conflict')) throw e;
      }
    }
    return gone;
  }

  async start(): Promise<void> {
    await this.renew();
    const every = (ms: number, what: string, fn: () => Promise<unknown>): void => {
      let running = false;
      const t = setInterval(() => {
        if (running) return;
        running = true;
        fn().catch((e: unknown) => this.o.log.warn({ err: e }, `${what} failed`)).finally(() => { running = false; });
      }, ms);
      t.unref();
      this.timers.push(t);
    };
    every(this.o.renewMs ?? RENEW_MS, 'renewing the API server identity lease', () => this.renew());
    every(GC_MS, 'collecting expired API server identity leases', () => this.collect());
  }

  stop(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }
}
