/**
 * Follows the pods of one namespace with a watch and timestamps, per pod, when the watch
 * delivered (a) the node agent's first status (status.startTime set) and (b) phase Running,
 * both measured from the moment the bench registered the pod (just before its create request).
 * Contract: `expect` must be called before the pod is created; `waitRunning` resolves true on
 * Running or false at its deadline; `run` ends only when the signal aborts (it re-watches
 * after a closed stream and relists after an error, with backoff).
 */
import type { KubeObject } from '../../src/api/resources/types.js';
import type { ResourceRef, RestClient } from '../../src/client/rest-client.js';
import { watchLoop } from './watch-loop.js';

type PodLike = KubeObject & { status?: { phase?: string; startTime?: string } };

interface Entry {
  readonly t0: number;
  firstStatusMs?: number;
  runningMs?: number;
  failed?: string;
  wake?: () => void;
}

export class PodTracker {
  private readonly entries = new Map<string, Entry>();
  /** Pod names the last list/watch showed as present (for waiting on deletion). */
  readonly present = new Set<string>();

  constructor(private readonly client: RestClient, private readonly pods: ResourceRef) {}

  expect(name: string): void {
    this.entries.set(name, { t0: performance.now() });
  }

  /** Resolves true once `name` is Running, false when it failed or at the deadline. */
  waitRunning(name: string, deadlineMs: number): Promise<boolean> {
    const e = this.entries.get(name);
    if (!e) throw new Error(`pod ${name} was not registered with expect()`);
    if (e.runningMs !== undefined) return Promise.resolve(true);
    if (e.failed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => { e.wake = undefined; resolve(false); }, deadlineMs);
      e.wake = () => { clearTimeout(timer); e.wake = undefined; resolve(e.runningMs !== undefined); };
    });
  }

  /** create → Running (ms) of these pods; undefined entries never got there. */
  runningMs(names: readonly string[]): Array<number | undefined> {
    return names.map((n) => this.entries.get(n)?.runningMs);
  }

  /** create → first status written by the node agent (ms). */
  firstStatusMs(names: readonly string[]): Array<number | undefined> {
    return names.map((n) => this.entries.get(n)?.firstStatusMs);
  }

  failures(names: readonly string[]): string[] {
    return names.flatMap((n) => { const f = this.entries.get(n)?.failed; return f ? [`${n}: ${f}`] : []; });
  }

  private see(type: string, p: PodLike): void {
    const name = p.metadata?.name ?? '';
    if (!name) return;
    if (type === 'DELETED') { this.present.delete(name); return; }
    this.present.add(name);
    const e = this.entries.get(name);
    if (!e) return;
    const now = performance.now();
    if (e.firstStatusMs === undefined && p.status?.startTime) e.firstStatusMs = now - e.t0;
    const phase = p.status?.phase;
    if (phase === 'Running' && e.runningMs === undefined) {
      e.runningMs = now - e.t0;
      e.wake?.();
    } else if ((phase === 'Failed' || phase === 'Succeeded') && e.runningMs === undefined && !e.failed) {
      e.failed = `phase ${phase}`;
      e.wake?.();
    }
  }

  /**
   * Lists once (resolving when the first list is in), then keeps watching in the background;
   * `done` settles when the signal aborts. (Wrapped in an object: an async function returning
   * a bare promise would wait for it.)
   */
  async start(signal: AbortSignal): Promise<{ done: Promise<void> }> {
    return watchLoop(this.client, this.pods, () => this.relist(), (type, obj) => this.see(type, obj as PodLike), signal);
  }

  private async relist(): Promise<string> {
    const list = await this.client.list(this.pods, {});
    this.present.clear();
    for (const p of list.items as PodLike[]) this.see('ADDED', p);
    return list.metadata?.resourceVersion ?? '';
  }
}
