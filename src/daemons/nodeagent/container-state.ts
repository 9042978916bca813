/**
 * What a pod worker remembers of one container of its pod, and how that becomes the
 * container's API status (state, lastState, ready, started, containerID).
 */
import type { ContainerView } from './pod-status.js';
import { kubeTime, type Container, type ContainerStateV1 } from './pod-types.js';
import type { ContainerProber } from './probes/prober.js';
import type { ContainerStatus } from './runtime/runtime.js';

export interface CState {
  /** The current container ('' when none). */
  id: string;
  /** The container before `id`, kept for `previous` logs. */
  prevId: string;
  restartCount: number;
  imageRef: string;
  runtime?: ContainerStatus;
  waiting?: { reason: string; message: string };
  lastTerminated?: ContainerStateV1['terminated'];
  /** Current crash-loop backoff step (0 = the next restart is immediate). */
  backoffMs: number;
  backoffUntil: number;
  /** Init containers: finished with exit 0. */
  succeeded: boolean;
  prober?: ContainerProber;
  /** finishedAt of the exit already handled, so one exit is acted upon once. */
  handledExit: number;
}

export function newContainerState(): CState {
  return { id: '', prevId: '', restartCount: 0, imageRef: '', backoffMs: 0, backoffUntil: 0, succeeded: false, handledExit: 0 };
}

export const timeOrUndefined = (ms: number): string | undefined => (ms > 0 ? kubeTime(ms) : undefined);

export function containerView(c: Container, s: CState | undefined, initDone: boolean, isInit: (c: Container) => boolean, runtimeName: string): ContainerView {
  const rt = s?.runtime;
  let state: ContainerStateV1;
  if (rt?.state === 'running') state = { running: { startedAt: timeOrUndefined(rt.startedAt) } };
  else if (rt?.state === 'exited' && !s?.waiting) state = { terminated: s?.lastTerminated ?? { exitCode: rt.exitCode, reason: rt.reason } };
  else if (!rt && s?.lastTerminated && !s.waiting) state = { terminated: s.lastTerminated };
  else if (s?.waiting) state = { waiting: { reason: s.waiting.reason, ...(s.waiting.message ? { message: s.waiting.message } : {}) } };
  else state = { waiting: { reason: initDone ? 'ContainerCreating' : 'PodInitializing' } };
  const lastState: ContainerStateV1 = state.terminated || !s?.lastTerminated ? {} : { terminated: s.lastTerminated };
  const runningNow = !!state.running;
  const ready = isInit(c) ? !!state.terminated && state.terminated.exitCode === 0 : runningNow && (s?.prober ? s.prober.ready : true);
  const id = rt?.id ?? s?.id;
  return {
    name: c.name, image: c.image ?? '', imageRef: s?.imageRef ?? '', containerId: id ? `${runtimeName}://${id}` : (state.terminated?.containerID ?? ''),
    state, lastState, restartCount: s?.restartCount ?? 0, ready, started: runningNow && (s?.prober ? s.prober.started : true),
  };
}
