/**
 * One worker per pod: every change to the pod, every container event noticed by the relist,
 * and every --sync-frequency tick "kicks" the worker; kicks coalesce and syncs of one pod never
 * overlap. A sync moves the runtime one step towards the pod spec (sandbox, init containers in
 * order, then containers, restarts with crash-loop backoff) and reports the pod status; a pod
 * that is being deleted, or that left every source, is stopped within its grace period and
 * cleaned up.
 * Contract: `kick` never throws and never waits; `finished` resolves once the pod is gone
 * from the node (containers stopped, sandbox removed, final deletion requested).
 */
import type { Logger } from 'pino';
import { startContainer, startProbes, stopContainer, type RunnerContext } from './container-runner.js';
import { containerView, newContainerState, timeOrUndefined, type CState } from './container-state.js';
import type { ObjectReader } from './env.js';
import type { EventSink } from './events.js';
import { findAdoptable } from './pod-adoption.js';
import { buildPodStatus } from './pod-status.js';
import type { Container, EphemeralContainer, Pod, PodSpec, PodStatusV1 } from './pod-types.js';
import { sandboxConfig, type DnsSettings, logDirectory } from './runtime-config.js';
import { isRuntimeError } from './runtime/runtime-errors.js';
import type { ContainerStatus, PodSandboxConfig, RuntimeBackend } from './runtime/runtime.js';
import { rm } from 'node:fs/promises';
import { refreshVolumes, setUpVolumes, tearDownPodDir, type VolumeContext } from './volumes/volumes.js';
import { emptyDirOverLimit } from './volumes/empty-dir-usage.js';
import type { ServiceLister } from './service-env.js';
import type { PodHooks } from './cm/pod-hooks.js';

export interface BackoffSettings { readonly initialMs: number; readonly maxMs: number; readonly resetMs: number }
export const DEFAULT_BACKOFF: BackoffSettings = { initialMs: 10_000, maxMs: 300_000, resetMs: 600_000 };

export interface WorkerDeps {
  readonly runtime: RuntimeBackend;
  /** Prefix of containerIDs, e.g. containerd. */
  readonly runtimeName: string;
  readonly hostIp: string;
  readonly rootDir: string;
  readonly logDir: string;
  readonly dns: DnsSettings;
  readonly cfsQuota: boolean;
  readonly allocatable: Readonly<Record<string, string>>;
  readonly reader: ObjectReader;
  /** The cluster's services, for their environment variables (none when standalone). */
  readonly services?: ServiceLister;
  /** Projected volumes with refreshed service-account tokens (volumes/projected.ts). */
  readonly projected: VolumeContext['projected'];
  /** Claims and volumes of persistentVolumeClaim volumes, and CSI node services (volumes/). */
  readonly claims?: VolumeContext['claims'];
  readonly csi?: VolumeContext['csi'];
  readonly sources?: VolumeContext['sources'];
  readonly events: EventSink;
  /** Pulls an image for the pod (its pull secrets, the node's pull limits); default the runtime's plain PullImage. */
  readonly pullImage?: (image: string, pod: Pod, sandbox: PodSandboxConfig | undefined) => Promise<string>;
  /** The node's guards: admission, cgroups, cpusets, sysctls, seccomp (cm/pod-hooks.ts). */
  readonly hooks?: PodHooks;
  readonly backoff: BackoffSettings;
  /** Publishes the pod's status (the manager writes it to the API and serves it on /pods). */
  readonly reportStatus: (pod: Pod, status: PodStatusV1) => Promise<void>;
  /** Final deletion of an API pod once it is stopped (DELETE with grace 0). */
  readonly finalDelete: (pod: Pod) => Promise<void>;
  readonly log: Logger;
}

/** Every container of the spec (init, main, ephemeral) by name, for stopping what runs. */
function containersByName(spec: PodSpec): Map<string, Container> {
  return new Map([...(spec.containers ?? []), ...(spec.initContainers ?? []), ...(spec.ephemeralContainers ?? [])].map((c) => [c.name, c]));
}

export class PodWorker {
  private pod: Pod;
  private removed = false;
  private running = false;
  private dirty = false;
  private done = false;
  private sandbox?: { id: string; attempt: number; ip: string; config: PodSandboxConfig };
  private volumes?: Map<string, string>;
  private volumesRefreshedAt = 0;
  private readonly cs = new Map<string, CState>();
  private initDone = false;
  private adopted = false;
  private terminal?: 'Succeeded' | 'Failed';
  private startTime?: number;
  private timer?: NodeJS.Timeout;
  private errorBackoffMs = 0;
  private podMessage = '';
  private podReason = '';
  private eviction?: { message: string; graceSeconds: number; done: () => void };
  private resolveFinished!: () => void;
  readonly finished = new Promise<void>((r) => { this.resolveFinished = r; });
  lastStatus?: PodStatusV1;

  constructor(pod: Pod, private readonly d: WorkerDeps) {
    this.pod = pod;
    this.lastStatus = pod.status;
  }

  get uid(): string { return this.pod.metadata?.uid ?? ''; }
  get current(): Pod { return this.pod; }
  /** Counts against --max-pods until it ends. */
  get active(): boolean { return !this.done && !this.terminal; }
  containerIds(): string[] { return [...this.cs.values()].flatMap((c) => [c.id, c.prevId]).filter(Boolean); }
  sandboxId(): string { return this.sandbox?.id ?? ''; }
  containerId(name: string, previous = false): string { const c = this.cs.get(name); return (previous ? c?.prevId : c?.id) ?? ''; }

  update(pod: Pod): void { this.pod = pod; this.kick(); }

  /** Stops the worker's own activity (probes, timers) without touching the pod: the agent is stopping. */
  halt(): void {
    this.done = true;
    if (this.timer) clearTimeout(this.timer);
    for (const s of this.cs.values()) { s.prober?.stop(); s.prober = undefined; }
  }
  remove(): void { this.removed = true; this.kick(); }
  /** Stops the pod for good with phase Failed, reason Evicted (the eviction manager); resolves once stopped. */
  evict(message: string, graceSeconds: number): Promise<void> {
    return new Promise((resolve) => {
      this.eviction = { message, graceSeconds, done: resolve };
      this.kick();
      void this.finished.then(resolve);
    });
  }

  kick(): void {
    if (this.done) return;
    if (this.running) { this.dirty = true; return; }
    this.running = true;
    void this.loop();
  }

  private schedule(ms: number): void {
    if (this.done) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.kick(), Math.max(0, ms));
    this.timer.unref();
  }

  private async loop(): Promise<void> {
    do {
      this.dirty = false;
      try {
        await this.sync();
        this.errorBackoffMs = 0;
      } catch (e) {
        this.errorBackoffMs = Math.min(Math.max(500, this.errorBackoffMs * 2), 30_000);
        this.d.log.warn({ pod: this.name(), err: (e as Error).message, retryInMs: this.errorBackoffMs }, 'pod sync failed');
        this.schedule(this.errorBackoffMs);
      }
    } while (this.dirty && !this.done);
    this.running = false;
  }

  private name(): string { return `${this.pod.metadata?.namespace}/${this.pod.metadata?.name}`; }

  private event(type: 'Normal' | 'Warning', reason: string, message: string, container?: string): void {
    this.d.events.emit(this.pod, type, reason, message, container ? `spec.containers{${container}}` : undefined);
  }

  private state(name: string): CState {
    let s = this.cs.get(name);
    if (!s) this.cs.set(name, s = newContainerState());
    return s;
  }

  private async sync(): Promise<void> {
    if (this.done) return;
    if (this.removed || this.pod.metadata?.deletionTimestamp) { await this.terminate(); return; }
    if (this.eviction && !this.terminal) { await this.evicted(this.eviction); return; }
    if (this.terminal) { await this.report(); return; }
    // A restarted agent keeps the start time the pod's status already has.
    this.startTime ??= (this.lastStatus?.startTime ? Date.parse(this.lastStatus.startTime) : NaN) || Date.now();
    await this.refresh();
    const ads = this.pod.spec?.activeDeadlineSeconds;
    if (typeof ads === 'number' && ads >= 0) {
      const left = this.startTime + ads * 1000 - Date.now();
      if (left <= 0) { await this.deadlineExceeded(); return; }
      this.schedule(left + 5);
    }
    // A new pod shows Pending with its containers ContainerCreating while the sandbox and
    // images are prepared, as on Kubernetes; the write is queued, not waited for.
    if (!this.lastStatus && !this.sandbox) this.report().catch((e: Error) => this.d.log.debug({ pod: this.name(), err: e.message }, 'early status not written'));
    if (!(await this.ensureSandbox())) { await this.report(); return; }
    await this.refreshVolumes();
    const spec = this.pod.spec ?? {};
    if (!this.initDone) {
      this.initDone = await this.syncInit(spec.initContainers ?? []);
    }
    if (this.initDone && !this.terminal) await this.syncMain(spec.containers ?? []);
    if (!this.terminal) await this.syncEphemeral(spec.ephemeralContainers ?? []);
    if (this.terminal) await this.stopSandbox();
    await this.report();
  }

  /** Reads the runtime state of every container the worker started. */
  private async refresh(): Promise<void> {
    for (const s of this.cs.values()) {
      if (!s.id) continue;
      try {
        s.runtime = await this.d.runtime.containerStatus(s.id);
      } catch (e) {
        if (!isRuntimeError(e, 'NOT_FOUND')) throw e;
        s.runtime = undefined;
        s.id = '';
      }
    }
  }

  /**
   * After an agent restart the runtime still has the pod's sandbox and containers: adopt the
   * ready sandbox (and the newest container of each name) instead of starting over; dead
   * sandboxes are removed and the next attempt number is used.
   */
  private async adopt(withProbes = true): Promise<number> {
    this.adopted = true;
    const found = await findAdoptable(this.d.runtime, this.uid);
    const st = found.sandbox;
    if (!st) return found.nextAttempt;
    const attempt = st.metadata.attempt ?? 0;
    const base = sandboxConfig(this.pod, attempt, { logDir: this.d.logDir, dns: this.d.dns });
    const config = this.d.hooks ? this.d.hooks.sandbox(this.pod, base) : base;
    this.sandbox = { id: st.id, attempt, ip: this.pod.spec?.hostNetwork ? this.d.hostIp : st.ip, config };
    const inits = this.pod.spec?.initContainers ?? [];
    const mains = this.pod.spec?.containers ?? [];
    const reported = new Map((this.lastStatus?.containerStatuses ?? []).map((x) => [x.name, x]));
    for (const [name, c] of found.containers) {
      const s = this.state(name);
      s.id = c.id;
      s.restartCount = c.attempt;
      s.imageRef = c.imageRef;
      s.runtime = c.status;
      if (c.prev) {
        s.prevId = c.prev.id;
        const p = c.prev.status;
        if (p?.state === 'exited') {
          s.lastTerminated = {
            exitCode: p.exitCode, reason: p.reason || (p.exitCode === 0 ? 'Completed' : 'Error'), ...(p.message ? { message: p.message } : {}),
            startedAt: timeOrUndefined(p.startedAt), finishedAt: timeOrUndefined(p.finishedAt), containerID: `${this.d.runtimeName}://${p.id}`,
          };
          s.handledExit = p.finishedAt;
        }
      }
      if (c.status?.state === 'exited' && c.status.exitCode === 0 && inits.some((x) => x.name === name)) s.succeeded = true;
      // Probes of a running container go on; their last results are what the pod's status said.
      const spec = mains.find((x) => x.name === name);
      if (withProbes && spec && c.status?.state === 'running') {
        const r = reported.get(name);
        const same = r?.containerID === `${this.d.runtimeName}://${c.id}`;
        startProbes(this.ctx(), spec, s, { started: same && r?.started === true, ready: same && r?.ready === true });
      }
    }
    this.initDone = inits.every((c) => this.cs.get(c.name)?.succeeded) || mains.some((c) => this.cs.get(c.name)?.id);
    this.d.log.info({ pod: this.name(), sandbox: st.id, ip: this.sandbox.ip }, 'adopted the running pod sandbox');
    return found.nextAttempt;
  }

  private volumeContext(): VolumeContext {
    return {
      rootDir: this.d.rootDir, reader: this.d.reader, log: this.d.log, podIp: '', hostIp: this.d.hostIp,
      projected: this.d.projected, ...(this.d.claims ? { claims: this.d.claims } : {}), ...(this.d.csi ? { csi: this.d.csi } : {}), ...(this.d.sources ? { sources: this.d.sources } : {}),
    };
  }

  private async ensureVolumes(): Promise<Map<string, string>> {
    if (!this.volumes) { this.volumes = await setUpVolumes(this.pod, this.volumeContext()); this.volumesRefreshedAt = Date.now(); }
    return this.volumes;
  }

  /** configMap, secret, downwardAPI and projected volumes follow their sources (at most every 5 s). */
  private async refreshVolumes(): Promise<void> {
    if (!this.volumes || Date.now() - this.volumesRefreshedAt < 5000) return;
    this.volumesRefreshedAt = Date.now();
    try {
      const changed = await refreshVolumes(this.pod, this.volumes, this.volumeContext());
      if (changed.length) this.d.log.debug({ pod: this.name(), volumes: changed }, 'volumes updated from their sources');
      const over = await emptyDirOverLimit(this.pod, this.volumes);
      if (over) await this.failPod('Evicted', over, 'Warning');
    } catch (e) {
      this.d.log.info({ pod: this.name(), err: (e as Error).message }, 'volume refresh failed; kept the last version');
    }
  }

  private async ensureSandbox(): Promise<boolean> {
    let fresh = 0;
    if (!this.sandbox && !this.adopted) fresh = await this.adopt();
    if (this.sandbox) {
      let ready = false;
      try { ready = (await this.d.runtime.podSandboxStatus(this.sandbox.id)).state === 'ready'; } catch (e) { if (!isRuntimeError(e, 'NOT_FOUND')) throw e; }
      if (ready) return true;
      // The sandbox died: Kubernetes starts over with a new sandbox and new containers.
      this.d.log.info({ pod: this.name() }, 'pod sandbox changed, it will be killed and re-created');
      await this.d.runtime.removePodSandbox(this.sandbox.id).catch(() => undefined);
      for (const s of this.cs.values()) { s.prober?.stop(); s.prober = undefined; if (s.id) s.restartCount++; s.id = ''; s.prevId = ''; s.runtime = undefined; }
      this.initDone = false;
    }
    const attempt = this.sandbox ? this.sandbox.attempt + 1 : fresh;
    try {
      await this.ensureVolumes();
    } catch (e) {
      this.podMessage = `MountVolume.SetUp failed: ${(e as Error).message}`;
      this.event('Warning', 'FailedMount', this.podMessage);
      this.schedule(Math.min(2000 * 2 ** Math.min(attempt, 5), 30_000));
      return false;
    }
    const base = sandboxConfig(this.pod, attempt, { logDir: this.d.logDir, dns: this.d.dns });
    const config = this.d.hooks ? this.d.hooks.sandbox(this.pod, base) : base;
    try {
      await this.d.hooks?.preparePod(this.pod);
      const id = await this.d.runtime.runPodSandbox(config);
      const st = await this.d.runtime.podSandboxStatus(id);
      this.sandbox = { id, attempt, ip: this.pod.spec?.hostNetwork ? this.d.hostIp : st.ip, config };
      this.podMessage = '';
      return true;
    } catch (e) {
      this.podMessage = `Failed to create pod sandbox: ${(e as Error).message}`;
      this.event('Warning', 'FailedCreatePodSandBox', this.podMessage);
      this.schedule(Math.min(1000 * 2 ** Math.min(attempt, 5), 30_000));
      return false;
    }
  }

  /** Runs init containers in order; true once all succeeded. */
  private async syncInit(inits: readonly Container[]): Promise<boolean> {
    const policy = this.pod.spec?.restartPolicy ?? 'Always';
    for (const c of inits) {
      const s = this.state(c.name);
      if (s.succeeded) continue;
      const rt = s.runtime;
      if (rt && rt.state === 'exited') {
        if (rt.exitCode === 0) { s.succeeded = true; this.noteExit(s, rt); continue; }
        this.noteExit(s, rt);
        if (policy === 'Never') { this.terminal = 'Failed'; return false; }
        await this.restartOrWait(c, s);
        return false;
      }
      if (rt && (rt.state === 'running' || rt.state === 'created')) return false;
      await startContainer(this.ctx(), c, s, false);
      return false;
    }
    return true;
  }

  private async syncMain(containers: readonly Container[]): Promise<void> {
    const policy = this.pod.spec?.restartPolicy ?? 'Always';
    let finished = 0;
    for (const c of containers) {
      const s = this.state(c.name);
      let rt = s.runtime;
      if (rt?.state === 'running' && s.prober?.unhealthy) {
        const kind = s.prober.unhealthy;
        this.event('Normal', 'Killing', `Container ${c.name} failed ${kind} probe, will be restarted`, c.name);
        await stopContainer(this.ctx(), c, s, this.graceSeconds(), true);
        rt = s.runtime;
      }
      if (!rt) {
        if (!s.id && s.lastTerminated && !this.shouldRestart(policy, s.lastTerminated.exitCode)) { finished++; continue; }
        if (!s.id && s.lastTerminated) { await this.restartOrWait(c, s); continue; }
        await startContainer(this.ctx(), c, s, true);
        continue;
      }
      if (rt.state !== 'exited') continue;
      this.noteExit(s, rt);
      if (!this.shouldRestart(policy, rt.exitCode)) { finished++; continue; }
      await this.restartOrWait(c, s);
    }
    if (containers.length > 0 && finished === containers.length) {
      const allOk = [...containers].every((c) => this.cs.get(c.name)?.lastTerminated?.exitCode === 0);
      this.terminal = allOk ? 'Succeeded' : 'Failed';
    }
  }

  /**
   * Ephemeral containers run once, as soon as the sandbox is there (Kubernetes does not wait for
   * init containers either): never restarted, never probed. One with a target joins that
   * container's process namespace, once it runs.
   */
  private async syncEphemeral(list: readonly EphemeralContainer[]): Promise<void> {
    for (const c of list) {
      const s = this.state(c.name);
      const rt = s.runtime;
      if (rt?.state === 'exited') { this.noteExit(s, rt); continue; }
      if (s.id || s.lastTerminated) continue;
      const target = c.targetContainerName ? this.cs.get(c.targetContainerName) : undefined;
      if (c.targetContainerName && !target?.id) { this.schedule(1000); continue; }
      await startContainer(this.ctx(), c, s, false, target?.id);
    }
  }

  private shouldRestart(policy: string, exitCode: number): boolean {
    return policy === 'Always' || (policy === 'OnFailure' && exitCode !== 0);
  }

  private noteExit(s: CState, rt: ContainerStatus): void {
    if (s.handledExit === rt.finishedAt && s.lastTerminated) return;
    s.handledExit = rt.finishedAt;
    s.prober?.stop();
    s.prober = undefined;
    s.lastTerminated = {
      exitCode: rt.exitCode, reason: rt.reason || (rt.exitCode === 0 ? 'Completed' : 'Error'), ...(rt.message ? { message: rt.message } : {}),
      startedAt: timeOrUndefined(rt.startedAt), finishedAt: timeOrUndefined(rt.finishedAt), containerID: `${this.d.runtimeName}://${rt.id}`,
    };
    // A container that ran long enough forgives its earlier crashes.
    if (rt.startedAt > 0 && rt.finishedAt - rt.startedAt >= this.d.backoff.resetMs) s.backoffMs = 0;
  }

  /** Restarts an exited container now, or waits out its crash-loop backoff. */
  private async restartOrWait(c: Container, s: CState): Promise<void> {
    const finishedAt = s.runtime?.finishedAt || Date.now();
    if (s.backoffMs > 0) {
      const until = Math.max(s.backoffUntil, finishedAt + s.backoffMs);
      if (Date.now() < until) {
        if (!s.waiting || s.waiting.reason !== 'CrashLoopBackOff') {
          this.event('Warning', 'BackOff', 'Back-off restarting failed container', c.name);
        }
        s.backoffUntil = until;
        s.waiting = { reason: 'CrashLoopBackOff', message: `back-off ${Math.round(s.backoffMs / 1000)}s restarting failed container=${c.name} pod=${this.pod.metadata?.name}_${this.pod.metadata?.namespace}(${this.uid})` };
        this.schedule(until - Date.now() + 5);
        return;
      }
      s.backoffMs = Math.min(s.backoffMs * 2, this.d.backoff.maxMs);
    } else {
      s.backoffMs = this.d.backoff.initialMs;
    }
    s.backoffUntil = 0;
    s.restartCount++;
    await startContainer(this.ctx(), c, s, true);
  }

  private ctx(): RunnerContext {
    return {
      deps: this.d, pod: this.pod, sandbox: this.sandbox,
      ensureVolumes: () => this.ensureVolumes(),
      event: (type, reason, message, container) => this.event(type, reason, message, container),
      schedule: (ms) => this.schedule(ms), kick: () => this.kick(), graceSeconds: () => this.graceSeconds(),
    };
  }

  private graceSeconds(): number {
    const m = this.pod.metadata;
    if (m?.deletionGracePeriodSeconds !== undefined && m.deletionGracePeriodSeconds !== null) return m.deletionGracePeriodSeconds;
    return this.pod.spec?.terminationGracePeriodSeconds ?? 30;
  }

  /** spec.activeDeadlineSeconds passed: stop everything, the pod fails for good. */
  private async deadlineExceeded(): Promise<void> {
    await this.failPod('DeadlineExceeded', 'Pod was active on the node longer than the specified deadline', 'Normal');
  }

  /** Stops everything; the pod fails for good with `reason` (a deadline, an eviction). */
  private async failPod(reason: string, message: string, type: 'Normal' | 'Warning'): Promise<void> {
    const spec = this.pod.spec ?? {};
    const byName = containersByName(spec);
    for (const [name, s] of this.cs) {
      if (s.runtime?.state === 'running') await stopContainer(this.ctx(), byName.get(name), s, this.graceSeconds(), true);
      if (s.runtime?.state === 'exited') this.noteExit(s, s.runtime);
      s.waiting = undefined;
    }
    this.terminal = 'Failed';
    this.podReason = reason;
    this.podMessage = message;
    this.event(type, reason, message);
    await this.stopSandbox();
    await this.report();
  }

  /** Evicted: stop every container within the grace given, free the pod's volumes, fail for good. */
  private async evicted(ev: { message: string; graceSeconds: number; done: () => void }): Promise<void> {
    const byName = containersByName(this.pod.spec ?? {});
    await Promise.all([...this.cs.entries()].map(async ([name, s]) => {
      if (s.runtime?.state === 'running') await stopContainer(this.ctx(), byName.get(name), s, ev.graceSeconds, true);
    }));
    for (const s of this.cs.values()) { if (s.runtime?.state === 'exited') this.noteExit(s, s.runtime); s.waiting = undefined; }
    this.terminal = 'Failed';
    this.podReason = 'Evicted';
    this.podMessage = ev.message;
    await this.stopSandbox();
    // As Kubernetes unmounts a terminated pod's volumes: an evicted pod's emptyDirs give their space back.
    await tearDownPodDir(this.d.rootDir, this.uid).catch(() => undefined);
    this.volumes = undefined;
    await this.report();
    ev.done();
  }

  private async stopSandbox(): Promise<void> {
    if (!this.sandbox) return;
    for (const s of this.cs.values()) { s.prober?.stop(); s.prober = undefined; }
    await this.d.runtime.stopPodSandbox(this.sandbox.id).catch((e: Error) => {
      if (!isRuntimeError(e, 'NOT_FOUND')) throw e;
    });
  }

  private async terminate(): Promise<void> {
    const grace = this.graceSeconds();
    if (!this.adopted) await this.adopt(false);
    await this.refresh();
    const spec = this.pod.spec ?? {};
    const byName = containersByName(spec);
    await Promise.all([...this.cs.entries()].map(async ([name, s]) => {
      if (s.runtime?.state !== 'running') return;
      this.event('Normal', 'Killing', `Stopping container ${name}`, name);
      await stopContainer(this.ctx(), byName.get(name), s, grace, true);
    }));
    for (const s of this.cs.values()) if (s.runtime?.state === 'exited') this.noteExit(s, s.runtime);
    if (this.sandbox) {
      await this.stopSandbox();
      await this.d.runtime.removePodSandbox(this.sandbox.id).catch(() => undefined);
    }
    await this.d.hooks?.podRemoved(this.pod).catch(() => undefined);
    await tearDownPodDir(this.d.rootDir, this.uid, this.d.csi).catch((e: Error) => this.d.log.warn({ pod: this.name(), err: e.message }, 'volume teardown failed'));
    // The pod is going away: so do its container logs (/var/log/pods/<ns>_<name>_<uid>).
    await rm(logDirectory(this.d.logDir, this.pod), { recursive: true, force: true }).catch(() => undefined);
    if (!this.removed) {
      const policy = spec.restartPolicy ?? 'Always';
      const allOk = (spec.containers ?? []).every((c) => this.cs.get(c.name)?.lastTerminated?.exitCode === 0);
      this.terminal ??= policy !== 'Always' && allOk ? 'Succeeded' : 'Failed';
      for (const s of this.cs.values()) { s.id = ''; s.runtime = undefined; s.waiting = undefined; }
      await this.report().catch(() => undefined);
      await this.d.finalDelete(this.pod);
    }
    this.done = true;
    if (this.timer) clearTimeout(this.timer);
    this.resolveFinished();
  }

  /** The current status as the worker sees it (for runonce and tests). */
  computeStatus(): PodStatusV1 {
    const spec = this.pod.spec ?? {};
    const initDone = this.initDone;
    const isInit = (c: Container): boolean => (spec.initContainers ?? []).some((x) => x.name === c.name);
    return buildPodStatus(this.pod, {
      init: (spec.initContainers ?? []).map((c) => containerView(c, this.cs.get(c.name), initDone, isInit, this.d.runtimeName)),
      // Without init containers a waiting container is ContainerCreating (e.g. while volumes mount), not PodInitializing.
      main: (spec.containers ?? []).map((c) => containerView(c, this.cs.get(c.name), initDone || !spec.initContainers?.length, isInit, this.d.runtimeName)),
      ephemeral: (spec.ephemeralContainers ?? []).map((c) => ({ ...containerView(c, this.cs.get(c.name), true, isInit, this.d.runtimeName), ready: false })),
      initDone, ...(this.terminal ? { terminalPhase: this.terminal } : {}),
      ...(this.podMessage ? { message: this.podMessage } : {}),
      ...(this.podReason ? { reason: this.podReason } : {}),
      podIp: this.pod.spec?.hostNetwork ? this.d.hostIp : (this.sandbox && !this.terminal ? this.sandbox.ip : (this.lastStatus?.podIP ?? '')),
      hostIp: this.d.hostIp, ...(this.startTime ? { startTime: this.startTime } : {}),
    }, this.lastStatus);
  }

  private async report(): Promise<void> {
    const status = this.computeStatus();
    this.lastStatus = status;
    await this.d.reportStatus(this.pod, status);
  }
}
