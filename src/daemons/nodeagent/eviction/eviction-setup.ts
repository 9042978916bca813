/**
 * The eviction manager wired from the node agent's options and its pod workers: the host's
 * signals (or injected ones), per-pod usage, node-level reclaim (dead containers of pods that
 * no longer run, unused images) and the optional memcg notification.
 */
import type { Logger } from 'pino';
import type { NodeagentConfig } from '../../../flags/nodeagent.js';
import type { EventSink } from '../events.js';
import type { ImageGc } from '../images/image-gc.js';
import type { PodManager } from '../pod-manager.js';
import { LABEL_POD_UID, logDirectory } from '../runtime-config.js';
import type { RuntimeBackend } from '../runtime/runtime.js';
import { podDir } from '../volumes/volumes.js';
import { EvictionManager, type ActivePod } from './eviction-manager.js';
import { hostSignals } from './host-signals.js';
import { MEMCG_ROOT, startMemcgNotifier, usageThreshold } from './memcg-notify.js';
import { hostPodUsage, type PodUsageSource, type WritableLayers } from './pod-usage.js';
import { thresholdsFromConfig, type Observations } from './thresholds.js';

export type EvictionConfig = Pick<NodeagentConfig,
  'rootDir' | 'evictionHard' | 'evictionSoft' | 'evictionSoftGracePeriod' | 'evictionMinimumReclaim' | 'evictionPressureTransitionPeriod'
  | 'evictionMaxPodGracePeriod' | 'experimentalKernelMemcgNotification'>;

export interface EvictionDeps {
  readonly runtime: RuntimeBackend;
  readonly pods: PodManager;
  readonly logDir: string;
  readonly events: EventSink;
  readonly imageGc?: ImageGc;
  readonly imageFsDir: () => Promise<string | undefined>;
  readonly onConditionsChange?: () => void;
  /** Tests: measure from here instead of the host, and this often. */
  readonly measure?: () => Promise<Observations>;
  readonly podUsage?: PodUsageSource;
  readonly monitoringIntervalMs?: number;
  readonly log: Logger;
}

function activePods(pods: PodManager, rootDir: string, logDir: string): ActivePod[] {
  const out: ActivePod[] = [];
  for (const w of pods.workers.values()) {
    if (!w.active || w.current.metadata?.deletionTimestamp) continue;
    const pod = w.current;
    const containers = new Map<string, string>();
    for (const c of pod.spec?.containers ?? []) { const id = w.containerId(c.name); if (id) containers.set(c.name, id); }
    out.push({
      pod, uid: w.uid, podDir: podDir(rootDir, w.uid), logDir: logDirectory(logDir, pod), containers,
      evict: (message, grace) => w.evict(message, grace),
    });
  }
  return out;
}

/** Exited containers and stopped sandboxes of pods that no longer run here (Kubernetes' container GC under disk pressure). */
async function removeDeadContainers(runtime: RuntimeBackend, pods: PodManager, log: Logger): Promise<void> {
  const running = new Set([...pods.workers.values()].filter((w) => w.active).map((w) => w.uid));
  for (const c of await runtime.listContainers({ state: 'exited' })) {
    if (running.has(c.labels[LABEL_POD_UID] ?? '')) continue;
    await runtime.removeContainer(c.id).then(() => log.info({ container: c.id }, 'dead container removed'), () => undefined);
  }
  for (const s of await runtime.listPodSandbox({ state: 'notready' })) {
    if (running.has(s.labels[LABEL_POD_UID] ?? '')) continue;
    await runtime.removePodSandbox(s.id).catch(() => undefined);
  }
}

export function setUpEviction(config: EvictionConfig, d: EvictionDeps): { manager: EvictionManager; run: (signal: AbortSignal) => Promise<void> } {
  const thresholds = thresholdsFromConfig(config);
  const manager = new EvictionManager({
    thresholds,
    measure: d.measure ?? hostSignals({ rootDir: config.rootDir, imageFsDir: d.imageFsDir }),
    podUsage: d.podUsage ?? hostPodUsage(undefined, writableLayersOf(d.runtime)),
    activePods: () => activePods(d.pods, config.rootDir, d.logDir),
    reclaim: {
      deadContainers: () => removeDeadContainers(d.runtime, d.pods, d.log),
      ...(d.imageGc ? { images: (bytes: number) => d.imageGc!.freeSpace(bytes) } : {}),
    },
    pressureTransitionPeriodMs: config.evictionPressureTransitionPeriod,
    maxPodGracePeriodSeconds: config.evictionMaxPodGracePeriod,
    ...(d.monitoringIntervalMs ? { monitoringIntervalMs: d.monitoringIntervalMs } : {}),
    emit: (pod, type, reason, message) => d.events.emit(pod, type, reason, message),
    ...(d.onConditionsChange ? { onConditionsChange: d.onConditionsChange } : {}),
    log: d.log,
  });
  const run = async (signal: AbortSignal): Promise<void> => {
    const memThreshold = thresholds.find((t) => t.signal === 'memory.available' && t.hard);
    if (config.experimentalKernelMemcgNotification && memThreshold && !d.measure) {
      const { stop } = startMemcgNotifier(() => usageThreshold(memThreshold, MEMCG_ROOT), () => manager.kick(), d.log.child({ component: 'memcg-notify' }), MEMCG_ROOT);
      signal.addEventListener('abort', stop, { once: true });
    }
    await manager.run(signal);
  };
  return { manager, run };
}

/** Containers' writable layers from CRI ListContainerStats, when the runtime answers it. */
function writableLayersOf(runtime: EvictionDeps['runtime']): WritableLayers | undefined {
  if (!runtime.listContainerStats) return undefined;
  return async () => {
    const out = new Map<string, number>();
    for (const s of await runtime.listContainerStats!()) if (s.writableLayer?.usedBytes !== undefined) out.set(s.id, s.writableLayer.usedBytes);
    return out;
  };
}
