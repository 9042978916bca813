/**
 * Prometheus text of the Summary's figures: /metrics/resource as kubelet's resource metrics
 * (what metrics-server scrapes: node_, pod_ and container_ CPU and working set, with
 * kubelet's labels and sample timestamps) and /metrics/cadvisor's container_* series
 * (usage, rss, network, filesystem) with cAdvisor's label names.
 */
import type { ContainerSummary, CpuStats, MemoryStats, PodSummary, Summary } from './summary.js';

type Labels = Readonly<Record<string, string>>;

const escape = (v: string): string => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const labelText = (l: Labels): string => {
  const parts = Object.entries(l).map(([k, v]) => `${k}="${escape(v)}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
};
const ms = (t: string | undefined): number => (t ? Date.parse(t) : Date.now());
const num = (v: number): string => (Number.isInteger(v) ? String(v) : v.toPrecision(12).replace(/\.?0+$/, ''));

class Family {
  private readonly lines: string[] = [];
  constructor(readonly name: string, private readonly help: string, private readonly type: 'gauge' | 'counter') {}
  add(labels: Labels, value: number | undefined, time?: string): void {
    if (value === undefined || !Number.isFinite(value)) return;
    this.lines.push(`${this.name}${labelText(labels)} ${num(value)}${time ? ` ${ms(time)}` : ''}`);
  }
  text(): string {
    if (this.lines.length === 0) return '';
    return [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`, ...this.lines].join('\n') + '\n';
  }
}

const cpuSeconds = (c: CpuStats | undefined): number | undefined => (c?.usageCoreNanoSeconds === undefined ? undefined : c.usageCoreNanoSeconds / 1e9);

/** kubelet's /metrics/resource. `scrapeError`: the summary could not be made (then only the error gauges). */
export function resourceMetricsText(s: Summary | undefined, scrapeError = false): string {
  const f = {
    containerCpu: new Family('container_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the container in core-seconds', 'counter'),
    containerMem: new Family('container_memory_working_set_bytes', '[STABLE] Current working set of the container in bytes', 'gauge'),
    containerStart: new Family('container_start_time_seconds', '[STABLE] Start time of the container since unix epoch in seconds', 'gauge'),
    nodeCpu: new Family('node_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the node in core-seconds', 'counter'),
    nodeMem: new Family('node_memory_working_set_bytes', '[STABLE] Current working set of the node in bytes', 'gauge'),
    podCpu: new Family('pod_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the pod in core-seconds', 'counter'),
    podMem: new Family('pod_memory_working_set_bytes', '[STABLE] Current working set of the pod in bytes', 'gauge'),
    resourceError: new Family('resource_scrape_error', '[STABLE] 1 if there was an error while getting container metrics, 0 otherwise', 'gauge'),
    scrapeError: new Family('scrape_error', '[ALPHA] 1 if there was an error while getting container metrics, 0 otherwise', 'gauge'),
  };
  if (s) {
    f.nodeCpu.add({}, cpuSeconds(s.node.cpu), s.node.cpu?.time);
    f.nodeMem.add({}, s.node.memory?.workingSetBytes, s.node.memory?.time);
    for (const p of s.pods) {
      const pl = { namespace: p.podRef.namespace, pod: p.podRef.name };
      f.podCpu.add(pl, cpuSeconds(p.cpu), p.cpu?.time);
      f.podMem.add(pl, p.memory?.workingSetBytes, p.memory?.time);
      for (const c of p.containers) {
        const cl = { container: c.name, namespace: p.podRef.namespace, pod: p.podRef.name };
        f.containerCpu.add(cl, cpuSeconds(c.cpu), c.cpu?.time);
        f.containerMem.add(cl, c.memory?.workingSetBytes, c.memory?.time);
        if (c.startTime) f.containerStart.add(cl, Date.parse(c.startTime) / 1000, c.startTime);
      }
    }
  }
  f.resourceError.add({}, scrapeError ? 1 : 0);
  f.scrapeError.add({}, scrapeError ? 1 : 0);
  return Object.values(f).map((x) => x.text()).join('');
}

/** cAdvisor-style container series (kubelet's /metrics/cadvisor). */
export function cadvisorMetricsText(s: Summary, machine: { cores: number; memoryBytes: number }): string {
  const f = {
    cpu: new Family('container_cpu_usage_seconds_total', 'Cumulative cpu time consumed in seconds.', 'counter'),
    memUsage: new Family('container_memory_usage_bytes', 'Current memory usage in bytes, including all memory regardless of when it was accessed', 'gauge'),
    memWs: new Family('container_memory_working_set_bytes', 'Current working set in bytes.', 'gauge'),
    memRss: new Family('container_memory_rss', 'Size of RSS in bytes.', 'gauge'),
    fsUsage: new Family('container_fs_usage_bytes', 'Number of bytes that are consumed by the container on this filesystem.', 'gauge'),
    rx: new Family('container_network_receive_bytes_total', 'Cumulative count of bytes received', 'counter'),
    rxErr: new Family('container_network_receive_errors_total', 'Cumulative count of errors encountered while receiving', 'counter'),
    tx: new Family('container_network_transmit_bytes_total', 'Cumulative count of bytes transmitted', 'counter'),
    txErr: new Family('container_network_transmit_errors_total', 'Cumulative count of errors encountered while transmitting', 'counter'),
    start: new Family('container_start_time_seconds', 'Start time of the container since unix epoch in seconds.', 'gauge'),
    cores: new Family('machine_cpu_cores', 'Number of logical CPU cores.', 'gauge'),
    mem: new Family('machine_memory_bytes', 'Amount of memory installed on the machine.', 'gauge'),
  };
  const addUsage = (l: Labels, cpu: CpuStats | undefined, mem: MemoryStats | undefined): void => {
    f.cpu.add(l, cpuSeconds(cpu), cpu?.time);
    f.memUsage.add(l, mem?.usageBytes, mem?.time);
    f.memWs.add(l, mem?.workingSetBytes, mem?.time);
    f.memRss.add(l, mem?.rssBytes, mem?.time);
  };
  addUsage({ container: '', id: '/', image: '', name: '', namespace: '', pod: '' }, s.node.cpu, s.node.memory);
  for (const p of s.pods) addPod(p);
  function addPod(p: PodSummary): void {
    const base = { namespace: p.podRef.namespace, pod: p.podRef.name };
    addUsage({ container: '', id: `/kubepods/pod${p.podRef.uid}`, image: '', name: '', ...base }, p.cpu, p.memory);
    const net = p.network as { time?: string; interfaces?: { name: string; rxBytes: number; rxErrors: number; txBytes: number; txErrors: number }[] } | undefined;
    for (const i of net?.interfaces ?? []) {
      const l = { container: 'POD', id: `/kubepods/pod${p.podRef.uid}`, image: '', interface: i.name, name: '', ...base };
      f.rx.add(l, i.rxBytes, net?.time);
      f.rxErr.add(l, i.rxErrors, net?.time);
      f.tx.add(l, i.txBytes, net?.time);
      f.txErr.add(l, i.txErrors, net?.time);
    }
    for (const c of p.containers) addContainer(c, base, p.podRef.uid);
  }
  function addContainer(c: ContainerSummary, base: Labels, uid: string): void {
    const l = { container: c.name, id: `/kubepods/pod${uid}/${c.name}`, image: '', name: c.name, ...base };
    addUsage(l, c.cpu, c.memory);
    const rootfs = c.rootfs as { usedBytes?: number; time?: string } | undefined;
    f.fsUsage.add({ ...l, device: 'rootfs' }, rootfs?.usedBytes, rootfs?.time);
    if (c.startTime) f.start.add(l, Date.parse(c.startTime) / 1000);
  }
  f.cores.add({}, machine.cores);
  f.mem.add({}, machine.memoryBytes);
  return Object.values(f).map((x) => x.text()).join('');
}
