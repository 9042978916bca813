// The multi-call program through its real launcher and symlinks, plus runDaemon in process.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { runDaemon } from '../../src/cli.js';
import { GIT_VERSION } from '../../src/version.js';

const root = process.cwd();
// tap wraps child_process and injects NODE_OPTIONS loader hooks into every child, even with a
// custom env; those hooks load the extensionless launcher as CommonJS and fail. /usr/bin/env -u
// strips the variable right before the program starts, so it runs as users run it.
function run(bin: string, args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync('/usr/bin/env', ['-u', 'NODE_OPTIONS', join(root, 'bin', bin), ...args], { encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

t.test('bin/apiserver --help lists grouped options with types, defaults and gates', async (t) => {
  const r = run('apiserver', ['--help']);
  t.equal(r.code, 0);
  t.equal(r.err, '');
  t.match(r.out, /^Usage: apiserver \[options\]/);
  for (const section of ['Generic:', 'Secure serving:', 'Storage:', 'Authentication:', 'Authorization:', 'Admission:', 'Audit:', 'Logging:', 'Ours (beyond the reference):', 'Feature gates']) {
    t.ok(r.out.includes(`\n${section}`), section);
  }
  t.match(r.out, /--secure-port int\s+.*\(default 6443\)/);
  t.match(r.out, /--request-timeout duration\s+.*\(default 1m0s\)/);
  t.match(r.out, /--service-node-port-range portRange\s+.*\(default 30000-32767\)/);
  t.match(r.out, /--data-dir string\s+.*\[ours/);
  t.match(r.out, /--master-service-namespace string.*DEPRECATED/);
  t.match(r.out, /AdvancedAuditing=true\|false \(BETA - default=true\)/);
  t.match(r.out, /VolumeSubpath=true\|false \(default=true\)/);
});

t.test('bin/nodeagent --version', async (t) => {
  const r = run('nodeagent', ['--version']);
  t.equal(r.code, 0);
  t.equal(r.out, `nodeagent ${GIT_VERSION}\n`);
  const raw = run('nodeagent', ['--version=raw']);
  t.equal(raw.code, 0);
  t.match(JSON.parse(raw.out) as object, { gitVersion: GIT_VERSION, major: '1' });
  const slow = run('apiserver', ['-v=2', '--version=True']);
  t.equal(slow.code, 0, 'version among other options goes through the full parser');
  t.equal(slow.out, `apiserver ${GIT_VERSION}\n`);
  const bad = run('apiserver', ['--version', '--bogus']);
  t.equal(bad.code, 2, 'options are still checked when --version is not alone');
});

t.test('corectl controller-manager --help (subcommand form)', async (t) => {
  const r = run('corectl', ['controller-manager', '--help']);
  t.equal(r.code, 0);
  t.match(r.out, /^Usage: controller-manager \[options\]/);
  t.match(r.out, /--concurrent_rc_syncs int32\s+.*\(default 5\)/);
  t.match(r.out, /--controllers stringSlice\s+.*\(default \[\*\]\)/);
});

t.test('corectl --help and --version', async (t) => {
  const h = run('corectl', ['--help']);
  t.equal(h.code, 0);
  for (const d of ['apiserver', 'controller-manager', 'nodeagent', 'proxy', 'scheduler', 'server']) t.match(h.out, new RegExp(`\\n  ${d}\\s`));
  const v = run('corectl', ['--version']);
  t.equal(v.code, 0);
  t.equal(v.out, `corectl ${GIT_VERSION}\n`);
});

t.test('corectl bogus: exit 2 and one line', async (t) => {
  const r = run('corectl', ['bogus']);
  t.equal(r.code, 2);
  t.equal(r.out, '');
  t.equal(r.err.trimEnd().split('\n').length, 1);
  t.match(r.err, /unknown daemon "bogus"/);
  const none = run('corectl', []);
  t.equal(none.code, 2);
  t.equal(none.err.trimEnd().split('\n').length, 1);
});

t.test('bad options: exit 2, one line naming the option, nothing started', async (t) => {
  const cases: [string, string[], RegExp][] = [
    ['apiserver', ['--secure-port=abc'], /--secure-port/],
    ['apiserver', ['--no-such-flag'], /--no-such-flag/],
    ['nodeagent', ['--runonce'], /--runonce/],
    ['corectl', ['controller-manager', '--leader-elect-renew-deadline=1m'], /--leader-elect-renew-deadline/],
    ['scheduler', ['--feature-gates=Nope=true'], /--feature-gates/],
  ];
  for (const [bin, args, pattern] of cases) {
    const r = run(bin, args);
    t.equal(r.code, 2, `${bin} ${args.join(' ')}: exit 2`);
    t.equal(r.out, '');
    t.equal(r.err.trimEnd().split('\n').length, 1, 'one line');
    t.match(r.err, pattern);
  }
});

t.test('deprecated option prints one warning line and still works', async (t) => {
  const r = run('controller-manager', ['--port=0', '--help']);
  t.equal(r.code, 0);
  t.equal(r.err.trimEnd().split('\n').length, 1);
  t.match(r.err, /--port is deprecated/);
});

t.test('runDaemon passes config, a logger and an AbortSignal aborted on SIGTERM', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'corectl-cli-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const mainFile = join(dir, 'main.mjs');
  writeFileSync(mainFile, [
    'export async function run(config, ctx) {',
    '  ctx.log.child({ component: "test" }).debug("started");',
    '  globalThis.__seen = { port: config.securePort, hasLog: typeof ctx.log.info === "function" };',
    '  await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));',
    '  return 7;',
    '}',
  ].join('\n'));
  const before = process.listenerCount('SIGTERM');
  const running = runDaemon('apiserver', { securePort: 1234, v: 0, logFormat: 'json', logFlushFrequency: 100 }, pathToFileURL(mainFile));
  const deadline = Date.now() + 5000;
  while (process.listenerCount('SIGTERM') === before && Date.now() < deadline) await new Promise((r) => setImmediate(r));
  while ((globalThis as { __seen?: unknown }).__seen === undefined && Date.now() < deadline) await new Promise((r) => setImmediate(r));
  t.same((globalThis as { __seen?: unknown }).__seen, { port: 1234, hasLog: true });
  process.emit('SIGTERM', 'SIGTERM');
  t.equal(await running, 7, 'run() result becomes the exit code');
  t.equal(process.listenerCount('SIGTERM'), before, 'signal handlers removed');
});

t.test('runDaemon: a module without run() or a throwing run() gives exit 1', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'corectl-cli-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const missing = join(dir, 'absent.mjs');
  t.equal(await runDaemon('scheduler', { v: 0 }, pathToFileURL(missing)), 1);
  const throwing = join(dir, 'throw.mjs');
  writeFileSync(throwing, 'export async function run() { throw new Error("boom"); }\n');
  t.equal(await runDaemon('scheduler', { v: 0, logFlushFrequency: 100 }, pathToFileURL(throwing)), 1);
});
