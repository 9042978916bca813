// The node agent's safety options end to end on the fake runtime: --protect-kernel-defaults
// refuses to start naming the tunables; privileged pods need --allow-privileged; hostNetwork
// follows --host-network-sources; a pod with an unsafe sysctl fails with SysctlForbidden unless
// --experimental-allowed-unsafe-sysctls names it; --exit-on-lock-contention makes a running
// agent (a child process) leave when another asks for its --lock-file; --max-open-files is
// raised with prlimit.
import t, { type Test } from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { parseNodeagentArgs } from '../../../src/flags/nodeagent.js';
import { startNodeAgent, type NodeAgent } from '../../../src/daemons/nodeagent/main.js';
import { KERNEL_DEFAULTS } from '../../../src/daemons/nodeagent/safety/kernel-tunables.js';
import { openFileLimits, raiseOpenFiles } from '../../../src/daemons/nodeagent/safety/open-files.js';
import { StartupError, takeLockFile } from '../../../src/daemons/nodeagent/startup-checks.js';
import { waitFor } from '../../helpers/wait-for.js';

const dir = await mkdtemp(join(tmpdir(), 'corectl-guards-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const CORECTL = fileURLToPath(new URL('../../../../bin/corectl', import.meta.url));

function args(name: string, extra: string[] = []): string[] {
  const root = join(dir, name);
  return ['--container-runtime=fake', `--coreconfig=${join(root, 'absent')}`, `--hostname-override=${name}`, `--root-dir=${root}`,
    '--enable-server=false', '--fail-swap-on=false', '--resolv-conf=', `--pod-manifest-path=${join(root, 'manifests')}`, '--file-check-frequency=200ms', ...extra];
}

async function procSys(overrides: Record<string, string>): Promise<string> {
  const sys = await mkdtemp(join(dir, 'sys-'));
  for (const [name, v] of Object.entries({ ...Object.fromEntries(Object.entries(KERNEL_DEFAULTS).map(([k, x]) => [k, String(x)])), ...overrides })) {
    const parts = name.split('.');
    await mkdir(join(sys, ...parts.slice(0, -1)), { recursive: true });
    await writeFile(join(sys, ...parts), `${v}\n`);
  }
  return sys;
}

t.test('--protect-kernel-defaults refuses to start, naming each tunable', async (t) => {
  const sys = await procSys({ 'kernel.panic': '1', 'kernel.panic_on_oops': '0' });
  const { config } = parseNodeagentArgs(args('kernel', ['--protect-kernel-defaults']));
  await t.rejects(startNodeAgent(config, { skipProcessTweaks: true, procSysPath: sys }), {
    name: 'StartupError',
    message: '--protect-kernel-defaults: invalid kernel flag: kernel.panic, expected value: 10, actual value: 1; invalid kernel flag: kernel.panic_on_oops, expected value: 1, actual value: 0',
  });
  const fine = await startNodeAgent(config, { skipProcessTweaks: true, procSysPath: await procSys({}) });
  await fine.stop();
  const lax = await startNodeAgent(parseNodeagentArgs(args('kernel2')).config, { skipProcessTweaks: true, procSysPath: sys });
  await lax.stop();
  t.pass('without the option, or with every tunable as expected, the agent starts');
});

async function runPods(t: Test, name: string, extra: string[], pods: Record<string, object>): Promise<NodeAgent> {
  const { config } = parseNodeagentArgs(args(name, extra));
  await mkdir(config.podManifestPath, { recursive: true });
  for (const [n, spec] of Object.entries(pods)) {
    await writeFile(join(config.podManifestPath, `${n}.json`), JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: n, namespace: 'default' }, spec }));
  }
  const agent = await startNodeAgent(config, { skipProcessTweaks: true, relistPeriodMs: 100 });
  t.teardown(() => agent.stop({ stopPods: true }));
  return agent;
}
const c = (extra: object = {}): object => ({ name: 'c', image: 'localhost/busybox:latest', imagePullPolicy: 'Never', ...extra });
const settled = (a: NodeAgent, name: string): Promise<{ phase?: string; reason?: string; message?: string }> => waitFor(`${name} settled`, () => {
  const p = a.pods.pods().find((x) => x.metadata?.name === `${name}-${a.nodeName}`);
  return p?.status?.phase === 'Running' || p?.status?.phase === 'Failed' ? p.status : undefined;
}, 15_000);

t.test('privileged containers and host networking by source', async (t) => {
  const pods = {
    priv: { containers: [c({ securityContext: { privileged: true } })] },
    hostnet: { hostNetwork: true, containers: [c()] },
  };
  const strict = await runPods(t, 'strict', ['--host-network-sources=api,http'], pods);
  t.match(await settled(strict, 'priv'), { phase: 'Failed', reason: 'Forbidden', message: /specified privileged container, but is disallowed/ }, '--allow-privileged is off by default');
  t.match(await settled(strict, 'hostnet'), { phase: 'Failed', reason: 'Forbidden', message: /host networking, but is disallowed/ }, 'a file pod is not an allowed host-network source');
  const open = await runPods(t, 'open', ['--allow-privileged', '--host-network-sources=file'], pods);
  t.match(await settled(open, 'priv'), { phase: 'Running' });
  t.match(await settled(open, 'hostnet'), { phase: 'Running' });
});

t.test('sysctls: safe always, unsafe only when allowed', async (t) => {
  const sysctl = (name: string): object => ({ securityContext: { sysctls: [{ name, value: '1024' }] }, containers: [c()] });
  const a = await runPods(t, 'sysctl', ['--experimental-allowed-unsafe-sysctls=net.core.*'], {
    safe: sysctl('net.ipv4.ip_unprivileged_port_start'), allowed: sysctl('net.core.somaxconn'), refused: sysctl('kernel.msgmax'),
  });
  t.match(await settled(a, 'safe'), { phase: 'Running' });
  t.match(await settled(a, 'allowed'), { phase: 'Running' });
  t.match(await settled(a, 'refused'), { phase: 'Failed', reason: 'SysctlForbidden', message: 'forbidden sysctl: "kernel.msgmax" not allowlisted' });
});

t.test('--exit-on-lock-contention: the holder leaves when another asks for the lock', async (t) => {
  const lock = join(dir, 'agent.lock');
  const child = spawn(process.execPath, [CORECTL, 'nodeagent', ...args('holder', ['--lock-file', lock, '--exit-on-lock-contention'])], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  t.teardown(() => { child.kill('SIGKILL'); });
  await waitFor('the child holds the lock', () => existsSync(lock) && readFileSync(lock, 'utf8').startsWith(`${child.pid}\n`), 20_000);
  await t.rejects(takeLockFile(lock, false, 0), StartupError, 'held: refused without waiting');
  const release = await takeLockFile(lock, false, 20_000);
  const code = await exited;
  t.equal(code, 0, 'the holder exited cleanly');
  if (code !== 0) t.comment(stderr);
  t.equal(readFileSync(lock, 'utf8'), `${process.pid}\n`, 'and the lock is ours');
  release();
  t.notOk(existsSync(lock));
  const noLock = spawnSync(process.execPath, [CORECTL, 'nodeagent', ...args('nolock', ['--exit-on-lock-contention'])], { encoding: 'utf8', timeout: 20_000 });
  t.equal(noLock.status, 1);
  t.match(noLock.stderr, /--exit-on-lock-contention needs --lock-file/);
});

t.test('--max-open-files raises the limit with prlimit', { skip: existsSync('/usr/bin/prlimit') ? false : 'needs prlimit' }, async (t) => {
  // A child with a low soft limit stands in for the agent (whose limits the test must not change).
  const child = spawn('prlimit', ['--nofile=256:', 'sleep', '30']);
  t.teardown(() => { child.kill(); });
  const pid = child.pid ?? 0;
  await waitFor('prlimit exec-ed sleep', () => openFileLimits(pid)?.soft === 256 && readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('sleep'));
  const hard = openFileLimits(pid)?.hard ?? 0;
  const got = raiseOpenFiles(1_000_000, pino({ level: 'silent' }), pid);
  // With CAP_SYS_RESOURCE both limits reach 1000000; without it the soft one reaches the hard one.
  t.ok(got === 1_000_000 || got === hard, `soft limit raised from 256 to ${got} (hard ${hard})`);
  t.ok((got ?? 0) > 256);
});
