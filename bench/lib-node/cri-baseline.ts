/**
 * The floor under the node agent: the same busybox pod started straight through CRI
 * (RunPodSandbox, ImageStatus, CreateContainer, StartContainer, then ContainerStatus polled
 * until RUNNING), with the same number in flight, so the bench can show what the agent adds.
 * Must run while no node agent watches this containerd (the agent removes sandboxes it does
 * not know). Sandboxes it made are removed before it returns.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { CriRuntime } from '../../src/daemons/nodeagent/runtime/cri/cri-runtime.js';
import type { PodSandboxConfig } from '../../src/daemons/nodeagent/runtime/runtime.js';

export interface CriBaselineResult { lat: number[]; sandboxMs: number[] }

export async function criBaseline(cri: CriRuntime, image: string, count: number, inFlight: number, logRoot: string): Promise<CriBaselineResult> {
  const lat: number[] = [];
  const sandboxMs: number[] = [];
  let next = 0;
  const one = async (i: number): Promise<void> => {
    const name = `cri-${i}`;
    const sc: PodSandboxConfig = {
      metadata: { name, uid: `uid-podbench-cri-${i}`, namespace: 'podbench-cri' }, hostname: name,
      logDirectory: `${logRoot}/podbench-cri_${name}`,
    };
    const t0 = performance.now();
    const sid = await cri.runPodSandbox(sc);
    sandboxMs.push(performance.now() - t0);
    await cri.imageStatus(image);
    const cid = await cri.createContainer(sid, { metadata: { name: 'sleep' }, image, command: ['sleep', '3600'], logPath: 'sleep/0.log' }, sc);
    await cri.startContainer(cid);
    for (let d = 1; (await cri.containerStatus(cid)).state !== 'running'; d = Math.min(d * 2, 50)) await sleep(d);
    lat.push(performance.now() - t0);
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, async () => {
    while (next < count) await one(next++);
  }));
  const mine = (await cri.listPodSandbox()).filter((s) => s.metadata.namespace === 'podbench-cri');
  await Promise.all(mine.map(async (s) => {
    await cri.stopPodSandbox(s.id).catch(() => undefined);
    await cri.removePodSandbox(s.id).catch(() => undefined);
  }));
  return { lat: lat.sort((a, b) => a - b), sandboxMs: sandboxMs.sort((a, b) => a - b) };
}
