/**
 * What the runtime still holds of a pod after an agent restart: its newest ready sandbox and,
 * in it, the newest container of each name. Dead sandboxes of the pod are removed, and the
 * next sandbox attempt number is returned so a new sandbox never collides with an old name.
 */
import type { ContainerStatus, PodSandboxStatus, RuntimeBackend } from './runtime/runtime.js';
import { LABEL_CONTAINER_NAME, LABEL_POD_UID } from './runtime-config.js';

export interface Adoptable {
  readonly nextAttempt: number;
  readonly sandbox?: PodSandboxStatus;
  /** Container name → newest container of that name, and the one before it (kept for `previous` logs and lastState). */
  readonly containers: Map<string, AdoptableContainer>;
}

export interface AdoptableContainer {
  id: string;
  attempt: number;
  imageRef: string;
  status?: ContainerStatus;
  prev?: { id: string; attempt: number; status?: ContainerStatus };
}

export async function findAdoptable(runtime: RuntimeBackend, uid: string): Promise<Adoptable> {
  const boxes = await runtime.listPodSandbox({ labelSelector: { [LABEL_POD_UID]: uid } });
  let nextAttempt = 0;
  const ready = boxes.filter((b) => b.state === 'ready').sort((x, y) => y.createdAt - x.createdAt)[0];
  for (const b of boxes) {
    nextAttempt = Math.max(nextAttempt, (b.metadata.attempt ?? 0) + 1);
    if (b !== ready) {
      await runtime.stopPodSandbox(b.id).catch(() => undefined);
      await runtime.removePodSandbox(b.id).catch(() => undefined);
    }
  }
  const containers: Adoptable['containers'] = new Map();
  if (!ready) return { nextAttempt, containers };
  const sandbox = await runtime.podSandboxStatus(ready.id);
  for (const c of await runtime.listContainers({ podSandboxId: ready.id })) {
    const name = c.labels[LABEL_CONTAINER_NAME] ?? c.metadata.name;
    const cur = containers.get(name);
    if (!cur) containers.set(name, { id: c.id, attempt: c.metadata.attempt, imageRef: c.imageRef });
    else if (c.metadata.attempt > cur.attempt) containers.set(name, { id: c.id, attempt: c.metadata.attempt, imageRef: c.imageRef, prev: { id: cur.id, attempt: cur.attempt } });
    else if (!cur.prev || c.metadata.attempt > cur.prev.attempt) cur.prev = { id: c.id, attempt: c.metadata.attempt };
  }
  for (const c of containers.values()) {
    const st = await runtime.containerStatus(c.id).catch(() => undefined);
    if (st) c.status = st;
    if (c.prev) {
      const pst = await runtime.containerStatus(c.prev.id).catch(() => undefined);
      if (pst) c.prev.status = pst;
    }
  }
  return { nextAttempt, sandbox, containers };
}
