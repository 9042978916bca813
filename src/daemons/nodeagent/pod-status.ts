/**
 * Pod status from what the worker knows: phase, conditions (PodScheduled, Initialized,
 * ContainersReady, Ready; transition times kept while a condition holds), container statuses
 * (state, lastState, restartCount, ready, started, image, imageID, containerID), IPs, start time
 * and QoS class. Pure: the same inputs give the same status.
 */
import { qosClass } from '../../api/resources/core/pod-qos.js';
import { kubeTime, type ContainerStateV1, type ContainerStatusV1, type Pod, type PodCondition, type PodStatusV1 } from './pod-types.js';

export interface ContainerView {
  readonly name: string;
  readonly image: string;
  readonly imageRef: string;
  readonly containerId: string;
  readonly state: ContainerStateV1;
  readonly lastState: ContainerStateV1;
  readonly restartCount: number;
  readonly ready: boolean;
  readonly started: boolean;
}

export interface PodView {
  readonly init: readonly ContainerView[];
  readonly main: readonly ContainerView[];
  /** Ephemeral containers: reported, but no part of the phase or readiness. */
  readonly ephemeral?: readonly ContainerView[];
  readonly initDone: boolean;
  /** Set when the pod ended for good (restart policy), or was rejected. */
  readonly terminalPhase?: 'Succeeded' | 'Failed';
  readonly reason?: string;
  readonly message?: string;
  readonly podIp: string;
  readonly hostIp: string;
  readonly startTime?: number;
}

function phaseOf(pod: Pod, v: PodView): string {
  if (v.terminalPhase) return v.terminalPhase;
  const policy = pod.spec?.restartPolicy ?? 'Always';
  if (!v.initDone) {
    const failedInit = v.init.some((c) => (c.state.terminated && c.state.terminated.exitCode !== 0) || (c.lastState.terminated && c.state.waiting));
    return failedInit && policy === 'Never' ? 'Failed' : 'Pending';
  }
  let waiting = 0, running = 0, stopped = 0, succeeded = 0;
  for (const c of v.main) {
    if (c.state.running) running++;
    else if (c.state.terminated) { stopped++; if (c.state.terminated.exitCode === 0) succeeded++; }
    else if (c.state.waiting) { if (c.lastState.terminated) stopped++; else waiting++; }
    else waiting++;
  }
  if (waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped > 0) {
    if (policy === 'Always') return 'Running';
    if (stopped === succeeded) return 'Succeeded';
    if (policy === 'Never') return 'Failed';
    return 'Running';
  }
  return 'Pending';
}

function condition(prev: readonly PodCondition[] | undefined, type: string, ok: boolean, now: string, reason?: string, message?: string): PodCondition {
  const status = ok ? 'True' : 'False';
  const old = prev?.find((c) => c.type === type);
  const at = old && old.status === status && old.lastTransitionTime ? old.lastTransitionTime : now;
  return { type, status, lastProbeTime: null, lastTransitionTime: at, ...(reason && !ok ? { reason } : {}), ...(message && !ok ? { message } : {}) };
}

function statusOf(c: ContainerView): ContainerStatusV1 {
  return {
    name: c.name, state: c.state, lastState: c.lastState, ready: c.ready, restartCount: c.restartCount, image: c.image,
    imageID: c.imageRef, ...(c.containerId ? { containerID: c.containerId } : {}), started: c.started,
  };
}

export function buildPodStatus(pod: Pod, v: PodView, prevStatus: PodStatusV1 | undefined, nowMs: number = Date.now()): PodStatusV1 {
  const now = kubeTime(nowMs);
  const prev = prevStatus?.conditions;
  const phase = phaseOf(pod, v);
  const notReady = v.main.filter((c) => !c.ready).map((c) => c.name);
  const terminal = phase === 'Succeeded' || phase === 'Failed';
  const containersReady = !terminal && v.initDone && notReady.length === 0;
  const initPending = v.init.filter((c) => !(c.state.terminated && c.state.terminated.exitCode === 0)).map((c) => c.name);
  const notReadyMsg = `containers with unready status: [${notReady.join(' ')}]`;
  const conditions: PodCondition[] = [
    condition(prev, 'PodReadyToStartContainers', !!v.podIp || !!pod.spec?.hostNetwork || v.main.some((c) => c.state.running), now),
    condition(prev, 'Initialized', v.initDone, now, 'ContainersNotInitialized', `containers with incomplete status: [${initPending.join(' ')}]`),
    condition(prev, 'Ready', containersReady, now, terminal ? 'PodCompleted' : 'ContainersNotReady', terminal ? undefined : notReadyMsg),
    condition(prev, 'ContainersReady', containersReady, now, terminal ? 'PodCompleted' : 'ContainersNotReady', terminal ? undefined : notReadyMsg),
    condition(prev, 'PodScheduled', true, now),
  ];
  const out: PodStatusV1 = {
    phase, conditions,
    ...(v.message ? { message: v.message } : {}),
    ...(v.reason ? { reason: v.reason } : {}),
    ...(v.hostIp ? { hostIP: v.hostIp, hostIPs: [{ ip: v.hostIp }] } : {}),
    ...(v.podIp ? { podIP: v.podIp, podIPs: [{ ip: v.podIp }] } : {}),
    ...(v.startTime ? { startTime: kubeTime(v.startTime) } : {}),
    ...(v.init.length ? { initContainerStatuses: v.init.map(statusOf) } : {}),
    containerStatuses: v.main.map(statusOf),
    ...(v.ephemeral?.length ? { ephemeralContainerStatuses: v.ephemeral.map(statusOf) } : {}),
    qosClass: qosClass(pod.spec),
  };
  return out;
}

/** A merge patch that turns any previous status into `s` (absent top-level fields become null). */
export function statusMergePatch(s: PodStatusV1): Record<string, unknown> {
  const keys = ['phase', 'conditions', 'message', 'reason', 'hostIP', 'hostIPs', 'podIP', 'podIPs', 'startTime', 'initContainerStatuses', 'containerStatuses', 'ephemeralContainerStatuses', 'qosClass'];
  const patch: Record<string, unknown> = {};
  for (const k of keys) patch[k] = (s as Record<string, unknown>)[k] ?? null;
  return { status: patch };
}
