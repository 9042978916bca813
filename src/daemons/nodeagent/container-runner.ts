/**
 * Starting and stopping one container of a pod, for the pod worker: image by pull policy,
 * environment and volumes, create, start, the postStart hook and the probes; on stop the
 * preStop hook, then a stop within what is left of the grace period. Outcomes that make the
 * container wait (image, config, create or start errors) are written into its state with the
 * Kubernetes reason, and the worker is asked to sync again later.
 */
import { mkdir } from 'node:fs/promises';
import { containerEnv, expandVars } from './env.js';
import { ensureImage } from './image-puller.js';
import type { CState } from './container-state.js';
import { kubeTime, type Container, type Pod } from './pod-types.js';
import type { WorkerDeps } from './pod-worker.js';
import { runAction } from './probes/handlers.js';
import { podServiceEnv } from './service-env.js';
import { writePodHostsFile } from './etc-hosts.js';
import { podDir } from './volumes/volumes.js';
import { containerDevices, containerMounts } from './volumes/container-mounts.js';
import { ContainerProber } from './probes/prober.js';
import { containerConfig } from './runtime-config.js';
import { isRuntimeError } from './runtime/runtime-errors.js';
import type { ContainerConfig, PodSandboxConfig } from './runtime/runtime.js';

/** What the runner needs from its pod worker. */
export interface RunnerContext {
  readonly deps: WorkerDeps;
  readonly pod: Pod;
  readonly sandbox: { readonly id: string; readonly ip: string; readonly config: PodSandboxConfig } | undefined;
  ensureVolumes(): Promise<Map<string, string>>;
  event(type: 'Normal' | 'Warning', reason: string, message: string, container?: string): void;
  /** Sync the pod again after `ms`. */
  schedule(ms: number): void;
  /** Sync the pod again soon (a probe result changed). */
  kick(): void;
  graceSeconds(): number;
}

/** `targetId`: an ephemeral container's target container (its runtime id), see containerConfig. */
export async function startContainer(ctx: RunnerContext, c: Container, s: CState, main: boolean, targetId?: string): Promise<void> {
  if (!ctx.sandbox) return;
  s.waiting = s.waiting ?? { reason: 'ContainerCreating', message: '' };
  const pullImage = ctx.deps.pullImage;
  const pull = pullImage ? (image: string, sb: PodSandboxConfig | undefined): Promise<string> => pullImage(image, ctx.pod, sb) : undefined;
  const pulled = await ensureImage(ctx.deps.runtime, c, s.waiting, ctx.sandbox.config, (type, reason, message) => ctx.event(type, reason, message, c.name), ctx.deps.backoff.initialMs, pull);
  if (!pulled.imageRef) {
    if (pulled.waiting) s.waiting = pulled.waiting;
    if (pulled.retryMs !== undefined) ctx.schedule(pulled.retryMs);
    return;
  }
  s.imageRef = pulled.imageRef;
  let config: ContainerConfig;
  try {
    const volumePaths = await ctx.ensureVolumes();
    const services = ctx.deps.services;
    // As Kubernetes' node agent: no environment before the services were read once.
    if (services && !services.synced()) throw new Error('services have not yet been read at least once, cannot construct envvars');
    const serviceEnv = podServiceEnv(ctx.pod, services?.list() ?? []);
    const env = await containerEnv(ctx.pod, c, { reader: ctx.deps.reader, allocatable: ctx.deps.allocatable, podIp: ctx.sandbox.ip, hostIp: ctx.deps.hostIp, serviceEnv });
    await mkdir(podDir(ctx.deps.rootDir, ctx.pod.metadata?.uid ?? ''), { recursive: true });
    const hostsFile = await writePodHostsFile(ctx.pod, { podDir: podDir(ctx.deps.rootDir, ctx.pod.metadata?.uid ?? ''), podIp: ctx.sandbox.ip, clusterDomain: ctx.deps.dns.clusterDomain });
    config = containerConfig({
      pod: ctx.pod, container: c, restartCount: s.restartCount, image: c.image ?? '', env, ...(hostsFile ? { hostsFile } : {}),
      command: (c.command ?? []).map((x) => expandVars(x, env)), args: (c.args ?? []).map((x) => expandVars(x, env)),
      volumePaths, devices: containerDevices(c, volumePaths), mounts: await containerMounts(c, volumePaths, env), cfsQuota: ctx.deps.cfsQuota, ...(targetId ? { targetId } : {}),
    });
    if (ctx.deps.hooks) config = ctx.deps.hooks.container(ctx.pod, c, config);
  } catch (e) {
    s.waiting = { reason: 'CreateContainerConfigError', message: (e as Error).message };
    ctx.event('Warning', 'Failed', `Error: ${(e as Error).message}`, c.name);
    ctx.schedule(2000);
    return;
  }
  let id: string;
  try {
    id = await ctx.deps.runtime.createContainer(ctx.sandbox.id, config, ctx.sandbox.config);
  } catch (e) {
    s.waiting = { reason: 'CreateContainerError', message: (e as Error).message };
    ctx.event('Warning', 'Failed', `Error: ${(e as Error).message}`, c.name);
    ctx.schedule(2000);
    return;
  }
  ctx.event('Normal', 'Created', `Created container ${c.name}`, c.name);
  // Keep one dead container for `previous` logs; older ones go.
  if (s.prevId) await ctx.deps.runtime.removeContainer(s.prevId).catch(() => undefined);
  s.prevId = s.id;
  s.id = id;
  try {
    await ctx.deps.runtime.startContainer(id);
  } catch (e) {
    // Counted as a failed run (exit 128, as Kubernetes reports StartError): policy and backoff apply.
    const message = (e as Error).message;
    s.waiting = { reason: 'RunContainerError', message };
    ctx.event('Warning', 'Failed', `Error: ${message}`, c.name);
    await ctx.deps.runtime.removeContainer(id).catch(() => undefined);
    s.id = '';
    s.runtime = undefined;
    s.lastTerminated = { exitCode: 128, reason: 'StartError', message, finishedAt: kubeTime(Date.now()) };
    s.handledExit = -1;
    ctx.schedule(1000);
    return;
  }
  s.waiting = undefined;
  ctx.deps.hooks?.containerStarted(ctx.pod, c, id);
  ctx.event('Normal', 'Started', `Started container ${c.name}`, c.name);
  s.runtime = await ctx.deps.runtime.containerStatus(id);
  const hook = c.lifecycle?.postStart;
  if (hook) {
    const r = await runAction(hook, { runtime: ctx.deps.runtime, containerId: id, container: c, podIp: ctx.sandbox.ip }, 30);
    if (!r.ok) {
      ctx.event('Warning', 'FailedPostStartHook', r.output, c.name);
      await stopContainer(ctx, c, s, ctx.graceSeconds(), false);
      return;
    }
  }
  if (main) startProbes(ctx, c, s);
}

/**
 * The probes of a running main container (after its start, or when a restarted agent adopts
 * it); failures are Unhealthy events as kubelet words them ("Liveness probe failed: ...").
 */
export function startProbes(ctx: RunnerContext, c: Container, s: CState, known?: { started: boolean; ready: boolean }): void {
  if (!ctx.sandbox || !s.id || !(c.livenessProbe || c.readinessProbe || c.startupProbe)) return;
  s.prober?.stop();
  s.prober = new ContainerProber({
    runtime: ctx.deps.runtime, containerId: s.id, container: c, podIp: ctx.sandbox.ip, startedAt: s.runtime?.startedAt || Date.now(), ...(known ? { known } : {}),
    onChange: (ev, changed) => {
      if (!ev.ok) ctx.event('Warning', 'Unhealthy', `${ev.kind[0]?.toUpperCase()}${ev.kind.slice(1)} probe failed: ${ev.output}`, c.name);
      if (changed) ctx.kick();
    },
  });
}

/** preStop hook, then stop within the grace period. */
export async function stopContainer(ctx: RunnerContext, c: Container | undefined, s: CState, graceSeconds: number, runPreStop: boolean): Promise<void> {
  if (!s.id) return;
  s.prober?.stop();
  s.prober = undefined;
  const t0 = Date.now();
  const hook = c?.lifecycle?.preStop;
  if (runPreStop && hook && s.runtime?.state === 'running' && ctx.sandbox) {
    const r = await runAction(hook, { runtime: ctx.deps.runtime, containerId: s.id, container: c, podIp: ctx.sandbox.ip }, Math.max(1, graceSeconds));
    if (!r.ok) ctx.event('Warning', 'FailedPreStopHook', r.output, c.name);
  }
  const left = Math.max(graceSeconds === 0 ? 0 : 2, Math.ceil(graceSeconds - (Date.now() - t0) / 1000));
  try {
    await ctx.deps.runtime.stopContainer(s.id, left, { timeoutMs: (left + 30) * 1000 });
  } catch (e) {
    if (!isRuntimeError(e, 'NOT_FOUND')) throw e;
  }
  s.runtime = await ctx.deps.runtime.containerStatus(s.id).catch(() => undefined);
}
