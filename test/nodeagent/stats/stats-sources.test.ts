/**
 * The stats sources without a runtime: /proc parsers, container cgroups found by id in a v1 and
 * a v2 tree (written to a temp dir as the kernel lays them out), du of a directory and its
 * cache period, and the Prometheus text of /metrics/resource.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CgroupReader } from '../../../src/daemons/nodeagent/stats/cgroup-stats.js';
import { parseMeminfo, parseNetDev, parseProcStatCpu } from '../../../src/daemons/nodeagent/stats/host-stats.js';
import { resourceMetricsText } from '../../../src/daemons/nodeagent/stats/resource-metrics.js';
import type { Summary } from '../../../src/daemons/nodeagent/stats/summary.js';
import { DiskUsageCache, diskUsage } from '../../../src/daemons/nodeagent/stats/volume-stats.js';

const dir = await mkdtemp(join(tmpdir(), 'corectl-stats-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

t.test('/proc parsers', async (t) => {
  const netdev = [
    'Inter-|   Receive                                                |  Transmit',
    ' face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed',
    '    lo:    100      1    0    0    0     0          0         0      100       1    0    0    0     0       0          0',
    '  eth0: 123456    100    2    0    0     0          0         0     7890      50    3    0    0     0       0          0',
    'veth12: 5 1 0 0 0 0 0 0 5 1 0 0 0 0 0 0',
  ].join('\n');
  t.same(parseNetDev(netdev), [{ name: 'eth0', rxBytes: 123456, rxErrors: 2, txBytes: 7890, txErrors: 3 }]);
  // user nice system idle iowait irq softirq steal: busy = 100+0+50+0+0+10 ticks = 1.6 s
  t.equal(parseProcStatCpu('cpu  100 0 50 1000 20 0 10 0 0 0\ncpu0 1 1 1 1\n'), 1_600_000_000);
  const mem = parseMeminfo('MemTotal:  1000 kB\nMemFree:  200 kB\nInactive(file): 300 kB\nAnonPages: 100 kB\n');
  t.same(mem, { capacityBytes: 1024000, usageBytes: 819200, workingSetBytes: 512000, availableBytes: 512000, rssBytes: 102400 });
});

t.test('a container\'s cgroup v1 figures, found by its id', async (t) => {
  const root = join(dir, 'v1');
  const id = 'a'.repeat(64);
  const mem = join(root, 'memory', 'kubepods', 'podx', id);
  const cpu = join(root, 'cpuacct', 'kubepods', 'podx', id);
  await mkdir(mem, { recursive: true });
  await mkdir(cpu, { recursive: true });
  await writeFile(join(mem, 'memory.usage_in_bytes'), '10485760\n');
  await writeFile(join(mem, 'memory.limit_in_bytes'), '9223372036854771712\n');
  await writeFile(join(mem, 'memory.stat'), 'cache 100\ntotal_rss 4096\ntotal_inactive_file 1048576\ntotal_pgfault 7\ntotal_pgmajfault 1\n');
  await writeFile(join(mem, 'cgroup.procs'), '42\n43\n');
  await writeFile(join(cpu, 'cpuacct.usage'), '123456789\n');
  const r = new CgroupReader(root);
  t.equal(r.version, 1);
  const rel = await r.find(id);
  t.equal(rel, join('kubepods', 'podx', id));
  t.same(await r.read(rel!), { usageCoreNanoSeconds: 123456789, usageBytes: 10485760, workingSetBytes: 9437184, rssBytes: 4096, pageFaults: 7, majorPageFaults: 1, pids: [42, 43] }, 'no limit: none reported');
  t.equal(await r.find('b'.repeat(64)), undefined);
});

t.test('cgroup v2 and the systemd driver\'s scope names', async (t) => {
  const root = join(dir, 'v2');
  const id = 'c'.repeat(64);
  const cg = join(root, 'kubepods.slice', `cri-containerd-${id}.scope`);
  await mkdir(cg, { recursive: true });
  await writeFile(join(root, 'cgroup.controllers'), 'cpu memory\n');
  await writeFile(join(cg, 'memory.current'), '2000\n');
  await writeFile(join(cg, 'memory.max'), '4096\n');
  await writeFile(join(cg, 'memory.stat'), 'anon 500\ninactive_file 1000\npgfault 3\npgmajfault 0\n');
  await writeFile(join(cg, 'cpu.stat'), 'usage_usec 1500\nuser_usec 1000\n');
  await writeFile(join(cg, 'cgroup.procs'), '7\n');
  const r = new CgroupReader(root);
  t.equal(r.version, 2);
  const rel = await r.find(id);
  t.same(await r.read(rel!), { usageCoreNanoSeconds: 1_500_000, usageBytes: 2000, workingSetBytes: 1000, rssBytes: 500, pageFaults: 3, majorPageFaults: 0, limitBytes: 4096, pids: [7] });
});

t.test('du of a directory, cached for the aggregation period; 0 turns it off', async (t) => {
  const v = join(dir, 'vol');
  await mkdir(join(v, 'sub'), { recursive: true });
  await writeFile(join(v, 'sub', 'f'), Buffer.alloc(100_000, 1));
  const u = await diskUsage(v);
  t.ok((u?.usedBytes ?? 0) >= 100_000, 'allocated bytes counted');
  t.equal(u?.inodesUsed, 3, 'the directory, its subdirectory and the file');
  const cache = new DiskUsageCache(60_000);
  const first = await cache.get(v);
  await writeFile(join(v, 'g'), Buffer.alloc(100_000, 1));
  t.same(await cache.get(v), first, 'the cached figure within the period');
  t.equal(await new DiskUsageCache(0).get(v), undefined);
});

t.test('/metrics/resource text', async (t) => {
  const time = '2026-01-02T03:04:05Z';
  const s: Summary = {
    node: { nodeName: 'n', cpu: { time, usageCoreNanoSeconds: 2_500_000_000 }, memory: { time, workingSetBytes: 1000 } },
    pods: [{
      podRef: { name: 'p"q', namespace: 'ns', uid: 'u' }, cpu: { time, usageCoreNanoSeconds: 1_000_000_000 }, memory: { time, workingSetBytes: 50 },
      containers: [{ name: 'c', startTime: time, cpu: { time, usageCoreNanoSeconds: 1_000_000_000 }, memory: { time, workingSetBytes: 40 } }],
    }],
  };
  const text = resourceMetricsText(s);
  const ts = Date.parse(time);
  t.match(text, `# TYPE node_cpu_usage_seconds_total counter\nnode_cpu_usage_seconds_total 2.5 ${ts}\n`);
  t.match(text, `node_memory_working_set_bytes 1000 ${ts}\n`);
  t.match(text, `pod_cpu_usage_seconds_total{namespace="ns",pod="p\\"q"} 1 ${ts}\n`);
  t.match(text, `container_memory_working_set_bytes{container="c",namespace="ns",pod="p\\"q"} 40 ${ts}\n`);
  t.match(text, `container_start_time_seconds{container="c",namespace="ns",pod="p\\"q"} ${ts / 1000} ${ts}\n`);
  t.match(text, 'resource_scrape_error 0\n');
  t.match(text, 'scrape_error 0\n');
  const failed = resourceMetricsText(undefined, true);
  t.match(failed, 'resource_scrape_error 1\n');
  t.notMatch(failed, 'node_cpu');
});
