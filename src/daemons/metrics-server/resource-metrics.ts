/**
 * A node agent's resource metrics as one snapshot: cumulative CPU seconds and working-set bytes
 * of the node and of each container, with the time each was measured. Read from kubelet's
 * /metrics/resource (Prometheus text: node_cpu_usage_seconds_total, node_memory_working_set_bytes,
 * container_cpu_usage_seconds_total{container,namespace,pod}, container_memory_working_set_bytes,
 * each sample with a millisecond timestamp) or from /stats/summary (the node's and containers'
 * cpu.usageCoreNanoSeconds and memory.workingSetBytes), whichever the agent serves.
 */

export interface Point { cpuSeconds: number; memoryBytes: number; timeMs: number }
export interface ContainerPoint extends Point { namespace: string; pod: string; container: string }
export interface NodeSnapshot { node?: Point; containers: ContainerPoint[] }

interface Sample { name: string; labels: Record<string, string>; value: number; timeMs?: number }

/** Unescapes a Prometheus label value (\\, \", \n). */
function unescape(v: string): string {
  return v.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

/** The samples of a Prometheus text exposition (comments and malformed lines skipped). */
export function parsePrometheusText(text: string): Sample[] {
  const out: Sample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    if (m[3]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
      for (let l = re.exec(m[3]); l; l = re.exec(m[3])) labels[l[1]!] = unescape(l[2]!);
    }
    const value = Number(m[4]);
    if (Number.isNaN(value)) continue;
    out.push({ name: m[1]!, labels, value, ...(m[5] !== undefined ? { timeMs: Number(m[5]) } : {}) });
  }
  return out;
}

/** /metrics/resource text → snapshot; samples without a timestamp are taken as measured at `nowMs`. */
export function snapshotFromResourceMetrics(text: string, nowMs: number): NodeSnapshot {
  const node: Partial<Point> = {};
  const containers = new Map<string, Partial<ContainerPoint>>();
  for (const s of parsePrometheusText(text)) {
    const t = s.timeMs ?? nowMs;
    if (s.name === 'node_cpu_usage_seconds_total') { node.cpuSeconds = s.value; node.timeMs = t; }
    else if (s.name === 'node_memory_working_set_bytes') node.memoryBytes = s.value;
    else if (s.name === 'container_cpu_usage_seconds_total' || s.name === 'container_memory_working_set_bytes') {
      const { namespace, pod, container } = s.labels;
      if (!namespace || !pod || !container) continue;
      const key = `${namespace}/${pod}/${container}`;
      const c = containers.get(key) ?? { namespace, pod, container };
      if (s.name === 'container_cpu_usage_seconds_total') { c.cpuSeconds = s.value; c.timeMs = t; } else c.memoryBytes = s.value;
      containers.set(key, c);
    }
  }
  const complete = (p: Partial<Point>): p is Point => p.cpuSeconds !== undefined && p.memoryBytes !== undefined && p.timeMs !== undefined;
  return {
    ...(complete(node) ? { node } : {}),
    containers: [...containers.values()].filter((c): c is ContainerPoint => complete(c)),
  };
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null ? v as Obj : {});
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** A stats/summary cpu+memory pair → point, when both are there. */
function summaryPoint(cpu: unknown, memory: unknown): Point | undefined {
  const c = obj(cpu), m = obj(memory);
  const nanos = num(c.usageCoreNanoSeconds);
  const ws = num(m.workingSetBytes);
  const time = typeof c.time === 'string' ? Date.parse(c.time) : NaN;
  if (nanos === undefined || ws === undefined || Number.isNaN(time)) return undefined;
  return { cpuSeconds: nanos / 1e9, memoryBytes: ws, timeMs: time };
}

/** /stats/summary JSON → snapshot. */
export function snapshotFromSummary(summary: unknown): NodeSnapshot {
  const s = obj(summary);
  const n = obj(s.node);
  const node = summaryPoint(n.cpu, n.memory);
  const containers: ContainerPoint[] = [];
  for (const p of Array.isArray(s.pods) ? s.pods : []) {
    const ref = obj(obj(p).podRef);
    for (const c of Array.isArray(obj(p).containers) ? obj(p).containers as unknown[] : []) {
      const point = summaryPoint(obj(c).cpu, obj(c).memory);
      if (!point || typeof ref.namespace !== 'string' || typeof ref.name !== 'string' || typeof obj(c).name !== 'string') continue;
      containers.push({ ...point, namespace: ref.namespace, pod: ref.name, container: obj(c).name as string });
    }
  }
  return { ...(node ? { node } : {}), containers };
}
