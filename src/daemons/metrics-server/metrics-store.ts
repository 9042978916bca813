/**
 * The last two snapshots of each node, and the usage derived from them as metrics-server
 * reports it: CPU is the rate of the cumulative CPU seconds between the two points (cores),
 * memory the latest working set; `timestamp` is the latest point's time and `window` the time
 * between the two. A series whose counter went down (a restarted container) has no usage until
 * the next scrape; a pod is reported only when every container seen for it has usage.
 */
import type { ContainerPoint, NodeSnapshot, Point } from './resource-metrics.js';

export interface Usage { cpuCores: number; memoryBytes: number; timeMs: number; windowMs: number }
export interface PodUsage { namespace: string; name: string; timeMs: number; windowMs: number; containers: { name: string; usage: Usage }[] }

function rate(prev: Point | undefined, cur: Point | undefined): Usage | undefined {
  if (!prev || !cur || cur.timeMs <= prev.timeMs || cur.cpuSeconds < prev.cpuSeconds) return undefined;
  const windowMs = cur.timeMs - prev.timeMs;
  return { cpuCores: (cur.cpuSeconds - prev.cpuSeconds) / (windowMs / 1000), memoryBytes: cur.memoryBytes, timeMs: cur.timeMs, windowMs };
}

const key = (c: ContainerPoint): string => `${c.namespace}/${c.pod}/${c.container}`;

export class MetricsStore {
  private readonly nodes = new Map<string, { prev?: NodeSnapshot; cur: NodeSnapshot }>();

  /** Records a node's new snapshot (the older of the two kept is dropped). */
  record(node: string, snap: NodeSnapshot): void {
    const had = this.nodes.get(node);
    // A scrape that saw nothing new keeps the older point, so the window stays meaningful.
    if (had && had.cur.node && snap.node && snap.node.timeMs === had.cur.node.timeMs) return;
    this.nodes.set(node, had ? { prev: had.cur, cur: snap } : { cur: snap });
  }

  /** Forgets nodes no longer in the cluster. */
  retain(names: ReadonlySet<string>): void {
    for (const n of this.nodes.keys()) if (!names.has(n)) this.nodes.delete(n);
  }

  nodeUsage(node: string): Usage | undefined {
    const s = this.nodes.get(node);
    return s ? rate(s.prev?.node, s.cur.node) : undefined;
  }

  nodeNames(): string[] {
    return [...this.nodes.keys()];
  }

  /** Every pod with usage for all its containers. */
  podUsages(): PodUsage[] {
    const out: PodUsage[] = [];
    for (const s of this.nodes.values()) {
      const prev = new Map((s.prev?.containers ?? []).map((c) => [key(c), c]));
      const pods = new Map<string, { namespace: string; name: string; containers: { name: string; usage: Usage | undefined }[] }>();
      for (const c of s.cur.containers) {
        const p = pods.get(`${c.namespace}/${c.pod}`) ?? { namespace: c.namespace, name: c.pod, containers: [] };
        p.containers.push({ name: c.container, usage: rate(prev.get(key(c)), c) });
        pods.set(`${c.namespace}/${c.pod}`, p);
      }
      for (const p of pods.values()) {
        if (!p.containers.every((c) => c.usage)) continue;
        const containers = p.containers.map((c) => ({ name: c.name, usage: c.usage! })).sort((a, b) => a.name.localeCompare(b.name));
        const timeMs = Math.max(...containers.map((c) => c.usage.timeMs));
        const windowMs = Math.max(...containers.map((c) => c.usage.windowMs));
        out.push({ namespace: p.namespace, name: p.name, timeMs, windowMs, containers });
      }
    }
    return out;
  }
}
