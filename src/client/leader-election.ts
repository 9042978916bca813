/**
 * Leader election on a lock object (Lease, Endpoints or ConfigMap record).
 *
 * A candidate polls the lock every retryPeriod. It may take the lock when the lock is free,
 * or when the record has not changed for leaseDuration as measured on the candidate's OWN
 * clock since it first saw that record (so clock skew between machines does not matter,
 * only clock rates). The holder renews every retryPeriod; each renewal is a conditional
 * update (resourceVersion), so two candidates can never both win the same round.
 *
 * Stepping down: the leader measures renewDeadline from the START of its last successful
 * renewal. If no renewal succeeds by then, it aborts the leading signal and calls
 * onStoppedLeading at once, even while a renewal is still in flight. Another candidate can
 * only take over leaseDuration after it saw that renewal's record, which is later, and
 * leaseDuration > renewDeadline, so on one clock the old leader has stopped first.
 *
 * What this does NOT give: fencing. A leader paused (GC, SIGSTOP, a frozen VM) past its lease
 * can wake up still believing it leads, and its in-flight writes are not rejected by the
 * server. Leases give liveness (someone leads soon after a leader dies), not mutual
 * exclusion; controllers must stay correct through optimistic concurrency on what they write.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { pino, type Logger } from 'pino';
import { realClock, type Clock } from './clock.js';
import type { LeaderElectionRecord, ResourceLock } from './resource-lock.js';
import { isApiError } from '../api/meta/status.js';

export interface LeaderCallbacks {
  /** Runs while leading; the signal aborts when leadership is lost or the elector stops. */
  onStartedLeading(signal: AbortSignal): void | Promise<void>;
  onStoppedLeading?(): void;
  /** The observed leader changed (may be this candidate). */
  onNewLeader?(identity: string): void;
}

export interface LeaderElectorOptions {
  lock: ResourceLock;
  identity?: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  callbacks: LeaderCallbacks;
  /** On a clean stop (signal aborted) while leading, clear the holder so others take over at once. */
  releaseOnCancel?: boolean;
  clock?: Clock;
  log?: Logger;
}

const JITTER = 1.2;

export function defaultIdentity(): string {
  return `${hostname()}_${randomBytes(8).toString('hex')}`;
}

export function validateLeaderElection(o: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number }): void {
  if (!(o.leaseDurationMs > o.renewDeadlineMs)) throw new Error('leader election: the lease duration must be greater than the renew deadline');
  if (!(o.renewDeadlineMs > JITTER * o.retryPeriodMs)) throw new Error(`leader election: the renew deadline must be greater than ${JITTER} x the retry period`);
  if (!(o.retryPeriodMs > 0)) throw new Error('leader election: the retry period must be positive');
}

function sameRecord(a: LeaderElectionRecord | undefined, b: LeaderElectionRecord | undefined): boolean {
  return !!a && !!b && (a.version === undefined || b.version === undefined || a.version === b.version) && a.holderIdentity === b.holderIdentity && a.renewTime === b.renewTime && a.acquireTime === b.acquireTime
    && a.leaseDurationSeconds === b.leaseDurationSeconds && a.leaderTransitions === b.leaderTransitions;
}

export class LeaderElector {
  readonly identity: string;
  private readonly o: LeaderElectorOptions;
  private readonly clock: Clock;
  private readonly log: Logger;
  private observed: LeaderElectionRecord | undefined;
  private observedTime = 0;
  private reportedLeader = '';
  private leading = false;

  constructor(o: LeaderElectorOptions) {
    validateLeaderElection(o);
    this.o = o;
    this.identity = o.identity ?? defaultIdentity();
    this.clock = o.clock ?? realClock;
    this.log = o.log ?? pino({ level: 'silent' });
  }

  isLeader(): boolean { return this.leading; }
  /** The holder last seen on the lock. */
  getLeader(): string { return this.observed?.holderIdentity ?? ''; }

  private observe(rec: LeaderElectionRecord): void {
    if (!sameRecord(rec, this.observed)) {
      this.observed = rec;
      this.observedTime = this.clock.now();
    }
    if (rec.holderIdentity && rec.holderIdentity !== this.reportedLeader) {
      this.reportedLeader = rec.holderIdentity;
      try { this.o.callbacks.onNewLeader?.(rec.holderIdentity); } catch (e) { this.log.error({ err: (e as Error).message }, 'onNewLeader failed'); }
    }
  }

  /** One attempt to take or keep the lock; true when this candidate holds it now. */
  private async tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const now = this.clock.now();
    const rec: LeaderElectionRecord = {
      holderIdentity: this.identity, leaseDurationSeconds: Math.ceil(this.o.leaseDurationMs / 1000),
      acquireTime: now, renewTime: now, leaderTransitions: 0,
    };
    let old: LeaderElectionRecord | undefined;
    try {
      old = await this.o.lock.get(signal);
      if (!old) {
        await this.o.lock.create(rec, signal);
        this.observe(rec);
        return true;
      }
    } catch (e) {
      if (!signal.aborted) this.log.info({ lock: this.o.lock.describe(), err: (e as Error).message }, 'cannot read or create the lock');
      return false;
    }
    this.observe(old);
    const mine = old.holderIdentity === this.identity;
    if (old.holderIdentity && !mine && this.observedTime + this.o.leaseDurationMs > this.clock.now()) return false;
    if (mine) { rec.acquireTime = old.acquireTime; rec.leaderTransitions = old.leaderTransitions; }
    else rec.leaderTransitions = old.leaderTransitions + 1;
    try {
      await this.o.lock.update(rec, signal);
    } catch (e) {
      if (!signal.aborted) this.log.info({ lock: this.o.lock.describe(), err: (e as Error).message }, 'cannot update the lock');
      return false;
    }
    this.observe(rec);
    return true;
  }

  private jittered(ms: number): number {
    return ms * (1 + Math.random() * (JITTER - 1));
  }

  /**
   * Campaigns until leading, leads until the lease is lost or the signal aborts, then returns.
   * Callers usually exit the process when this returns because leadership was lost.
   */
  async run(signal: AbortSignal): Promise<void> {
    // Acquire.
    let acquiredStart: number;
    for (;;) {
      if (signal.aborted) return;
      const start = this.clock.now();
      if (await this.tryAcquireOrRenew(signal)) { acquiredStart = start; break; }
      try { await this.clock.sleep(this.jittered(this.o.retryPeriodMs), signal); } catch { return; }
    }
    await this.lead(signal, acquiredStart);
  }

  private async lead(signal: AbortSignal, acquiredStart: number): Promise<void> {
    const leadCtl = new AbortController();
    const stepDown = new AbortController();
    const both = AbortSignal.any([signal, stepDown.signal]);
    let deadlineAt = acquiredStart + this.o.renewDeadlineMs;
    this.leading = true;
    this.log.info({ identity: this.identity, lock: this.o.lock.describe() }, 'became leader');
    const stop = (): void => {
      if (!this.leading) return;
      this.leading = false;
      leadCtl.abort(new Error('leadership lost'));
      try { this.o.callbacks.onStoppedLeading?.(); } catch (e) { this.log.error({ err: (e as Error).message }, 'onStoppedLeading failed'); }
    };
    // Watchdog: steps down the moment the renew deadline passes, whatever the renewal is doing.
    const watchdog = (async (): Promise<void> => {
      for (;;) {
        const rem = deadlineAt - this.clock.now();
        if (rem <= 0) {
          this.log.warn({ identity: this.identity }, 'failed to renew the lease within the renew deadline: stepping down');
          stop();
          stepDown.abort(new Error('renew deadline passed'));
          return;
        }
        try { await this.clock.sleep(rem, both); } catch { return; }
      }
    })();
    const work = (async (): Promise<void> => {
      try { await this.o.callbacks.onStartedLeading(leadCtl.signal); } catch (e) { this.log.error({ err: (e as Error).message }, 'onStartedLeading failed'); }
    })();
    // Renew.
    while (!both.aborted) {
      try { await this.clock.sleep(this.o.retryPeriodMs, both); } catch { break; }
      const start = this.clock.now();
      const ok = await this.tryAcquireOrRenew(both);
      if (ok && !both.aborted && this.leading) deadlineAt = start + this.o.renewDeadlineMs;
    }
    const cleanStop = signal.aborted && this.leading;
    stop();
    stepDown.abort();
    await watchdog;
    if (cleanStop && this.o.releaseOnCancel) {
      // Release only once the leader's work has wound down (bounded by the renew deadline),
      // so that the next leader does not start while this one is still acting.
      const limit = new AbortController();
      const settled = await Promise.race([
        work.then(() => true),
        this.clock.sleep(this.o.renewDeadlineMs, limit.signal).then(() => false, () => false),
      ]);
      limit.abort();
      if (settled) await this.release();
      else this.log.warn('leader work did not stop within the renew deadline: not releasing the lock');
    }
  }

  /** Clears the holder so that another candidate need not wait out the lease. */
  private async release(): Promise<void> {
    if (!this.observed || this.observed.holderIdentity !== this.identity) return;
    const now = this.clock.now();
    const rec: LeaderElectionRecord = { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now, leaderTransitions: this.observed.leaderTransitions };
    const ac = AbortSignal.timeout(Math.max(1000, this.o.retryPeriodMs));
    // A stop can cut short a renewal the server already applied: the first attempt then fails
    // with 409 on a stale version, so read the lock again and retry once while it is still ours.
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await this.o.lock.update(rec, ac);
        this.observe(rec);
        return;
      } catch (e) {
        const conflict = isApiError(e) && e.code === 409;
        if (!conflict || attempt > 0) { this.log.info({ err: (e as Error).message }, 'cannot release the lock'); return; }
        const fresh = await this.o.lock.get(ac).catch(() => undefined);
        if (!fresh || fresh.holderIdentity !== this.identity) return;
        rec.leaderTransitions = fresh.leaderTransitions;
      }
    }
  }
}
