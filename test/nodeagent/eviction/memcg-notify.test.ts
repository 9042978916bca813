/**
 * --experimental-kernel-memcg-notification's helper on a real cgroup v1 memory controller
 * (skipped without one, without root or without python3's os.eventfd): a child cgroup gets a
 * usage threshold a few MiB above its usage; a process in it that fills tmpfs crosses it and
 * the callback fires without any polling. Also the usage threshold arithmetic.
 */
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { pino } from 'pino';
import { memcgNotificationUnavailable, startMemcgNotifier, usageThreshold } from '../../../src/daemons/nodeagent/eviction/memcg-notify.js';
import { thresholdsFromConfig } from '../../../src/daemons/nodeagent/eviction/thresholds.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

t.test('usage threshold = MemTotal - threshold + inactive file pages', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-memcg-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'meminfo'), 'MemTotal:        1048576 kB\n');
  writeFileSync(join(dir, 'memory.stat'), 'cache 1\ntotal_inactive_file 104857600\n');
  const [th] = thresholdsFromConfig({ evictionHard: { 'memory.available': '100Mi' }, evictionSoft: {}, evictionSoftGracePeriod: {}, evictionMinimumReclaim: {} });
  t.equal(usageThreshold(th!, dir, join(dir, 'meminfo')), 2 ** 30 - 100 * 2 ** 20 + 104857600);
});

const root = '/sys/fs/cgroup/memory';
const why = process.getuid?.() !== 0 ? 'needs root' : memcgNotificationUnavailable(root);
t.test('the kernel reports a crossing of the threshold', { skip: why ?? false }, async (t) => {
  const cg = `${root}/corectl-memcg-test-${process.pid}`;
  mkdirSync(cg);
  const shm = `/dev/shm/corectl-memcg-${process.pid}`;
  let stop = (): void => undefined;
  t.teardown(() => {
    stop();
    spawnSync('rm', ['-f', shm]);
    try { writeFileSync(`${cg}/memory.force_empty`, '0'); } catch { /* best effort */ }
    try { rmdirSync(cg); } catch { /* a process may still be leaving */ }
  });
  const usage = Number(readFileSync(`${cg}/memory.usage_in_bytes`, 'utf8'));
  let crossed = 0;
  let armed: Promise<void> = Promise.resolve();
  const fired = new Promise<void>((resolve) => {
    const n = startMemcgNotifier(() => usage + 8 * 2 ** 20, () => { crossed++; resolve(); }, pino({ level: 'silent' }), cg, 60_000);
    stop = n.stop;
    armed = n.armed;
  });
  await armed; // the helper has registered its eventfd
  t.equal(crossed, 0, 'nothing before the usage grows');
  const r = spawnSync('sh', ['-c', `echo $$ > ${cg}/cgroup.procs && dd if=/dev/zero of=${shm} bs=1M count=32 2>/dev/null`]);
  t.equal(r.status, 0);
  const timeout = new Promise<void>((_r, reject) => setTimeout(() => reject(new Error('no notification within 15s')), 15_000).unref());
  await Promise.race([fired, timeout]);
  t.ok(crossed >= 1, 'notified');
});
