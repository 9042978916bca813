/**
 * Probes of one running container (startup, liveness, readiness), each on its own timer with
 * Kubernetes' semantics: nothing runs before initialDelaySeconds; a result flips only after
 * successThreshold / failureThreshold consecutive results; liveness and readiness wait for the
 * startup probe to succeed. The prober only records results and calls `onChange`; the pod
 * worker decides what to do (restart on liveness failure, readiness in status).
 * Contract: stop() ends every timer; no callback runs after stop().
 */
import type { Container, Probe } from '../pod-types.js';
import type { RuntimeBackend } from '../runtime/runtime.js';
import { runAction } from './handlers.js';

export type ProbeKind = 'startup' | 'liveness' | 'readiness';

export interface ProbeEvent { kind: ProbeKind; ok: boolean; output: string }

export interface ContainerProberOptions {
  readonly runtime: RuntimeBackend;
  readonly containerId: string;
  readonly container: Container;
  readonly podIp: string;
  readonly startedAt: number;
  /** Called when a probe's settled result changes, and for every failed attempt (for events). */
  readonly onChange: (e: ProbeEvent, settledChanged: boolean) => void;
  /**
   * Results known from before (an agent restart adopting a running container): started and
   * ready as the pod's last status said, so that adoption does not flap the pod's readiness.
   */
  readonly known?: { started: boolean; ready: boolean };
}

interface ProbeState { probe: Probe; ok: boolean | undefined; successes: number; failures: number; timer?: NodeJS.Timeout; running: boolean }

export class ContainerProber {
  private readonly states = new Map<ProbeKind, ProbeState>();
  private stopped = false;

  constructor(private readonly o: ContainerProberOptions) {
    const c = o.container;
    const add = (k: ProbeKind, p: Probe | undefined): void => { if (p) this.states.set(k, { probe: p, ok: undefined, successes: 0, failures: 0, running: false }); };
    add('startup', c.startupProbe);
    add('liveness', c.livenessProbe);
    add('readiness', c.readinessProbe);
    const startup = this.states.get('startup');
    if (o.known?.started && startup) startup.ok = true;
    const readiness = this.states.get('readiness');
    if (o.known?.ready && readiness) readiness.ok = true;
    for (const [k, s] of this.states) this.schedule(k, s, Math.max(0, (s.probe.initialDelaySeconds ?? 0) * 1000 - (Date.now() - o.startedAt)));
  }

  /** Started: true when there is no startup probe or it succeeded. */
  get started(): boolean {
    const s = this.states.get('startup');
    return !s || s.ok === true;
  }

  /** Ready: startup done and readiness succeeded (no readiness probe: ready once started). */
  get ready(): boolean {
    if (!this.started) return false;
    const r = this.states.get('readiness');
    return !r || r.ok === true;
  }

  /** True when the liveness (or startup) probe has failed past its threshold. */
  get unhealthy(): ProbeKind | undefined {
    if (this.states.get('startup')?.ok === false) return 'startup';
    if (this.states.get('liveness')?.ok === false) return 'liveness';
    return undefined;
  }

  private schedule(k: ProbeKind, s: ProbeState, delayMs: number): void {
    if (this.stopped) return;
    s.timer = setTimeout(() => { void this.attempt(k, s); }, delayMs);
    s.timer.unref();
  }

  private async attempt(k: ProbeKind, s: ProbeState): Promise<void> {
    const period = Math.max(1, s.probe.periodSeconds ?? 10) * 1000;
    if (this.stopped) return;
    if (k !== 'startup' && !this.started) { this.schedule(k, s, period); return; }
    if (k === 'startup' && s.ok === true) return; // done for the container's lifetime
    s.running = true;
    const r = await runAction(s.probe, { runtime: this.o.runtime, containerId: this.o.containerId, container: this.o.container, podIp: this.o.podIp }, Math.max(1, s.probe.timeoutSeconds ?? 1));
    s.running = false;
    if (this.stopped) return;
    const before = s.ok;
    if (r.ok) {
      s.failures = 0;
      s.successes++;
      if (s.successes >= Math.max(1, k === 'readiness' ? (s.probe.successThreshold ?? 1) : 1)) s.ok = true;
    } else {
      s.successes = 0;
      s.failures++;
      if (s.failures >= Math.max(1, s.probe.failureThreshold ?? 3)) s.ok = false;
    }
    const changed = before !== s.ok;
    if (changed || !r.ok) this.o.onChange({ kind: k, ok: r.ok, output: r.output }, changed);
    // A failed liveness probe ends the container; the worker stops us then.
    this.schedule(k, s, period);
  }

  stop(): void {
    this.stopped = true;
    for (const s of this.states.values()) if (s.timer) clearTimeout(s.timer);
  }
}
