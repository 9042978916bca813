import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { parseApiserverArgs } from '../../src/flags/apiserver.js';
import { run, servingOptionsFromConfig } from '../../src/daemons/apiserver/main.js';
import { freePort, h2request, runExpectingStartFailure, startApiserver } from '../helpers/apiserver.js';
import { kubectl as findKubectl } from '../helpers/kubectl.js';

const log = pino({ level: 'silent' });

t.test('config mapping', async (t) => {
  const { config } = parseApiserverArgs(['--authorization-mode=AlwaysDeny,AlwaysAllow', '--request-timeout=30s', '--tls-min-version=VersionTLS13']);
  const o = servingOptionsFromConfig(config);
  t.same(o.authorizationMode, ['AlwaysDeny', 'AlwaysAllow']);
  t.equal(o.requestTimeout, 30_000);
  t.equal(o.tlsMinVersion, 'VersionTLS13');
  t.equal(o.tlsCertFile, undefined, 'unset strings stay unset');
  t.equal(o.securePort, 6443);
  t.equal(o.anonymousAuth, true);
  t.equal(o.maxRequestsInflight, 400);
  t.equal(o.maxMutatingRequestsInflight, 200);
});

t.test('the full in-process server answers health', async (t) => {
  const s = await startApiserver();
  t.teardown(() => s.stop());
  // A client certificate: anonymous requests are off under the default AlwaysAllow.
  const ca = { ca: await readFile(s.caFile), cert: await readFile(s.clientCertFile), key: await readFile(s.clientKeyFile) };
  const r = await h2request(s.url, { path: '/readyz?verbose', ...ca });
  t.equal(r.status, 200, r.body);
  t.match(r.body, /readyz check passed/);
  const one = await h2request(s.url, { path: '/readyz/storage', ...ca });
  t.equal(one.status, 200);
  t.equal(one.body, 'ok');
});

t.test('run: serves until the signal aborts, then returns 0', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-run-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const port = await freePort();
  const { config } = parseApiserverArgs([`--secure-port=${port}`, '--bind-address=127.0.0.1', `--cert-dir=${dir}/certs`, `--data-dir=${dir}/data`]);
  const ac = new AbortController();
  const done = run(config, { log, signal: ac.signal });
  const end = Date.now() + 10_000;
  let status = 0;
  while (Date.now() < end) {
    try {
      status = (await h2request(`https://127.0.0.1:${port}`, { path: '/healthz', ca: await readFile(join(dir, 'certs', 'apiserver.crt')), servername: 'localhost' })).status;
      // No client CA, and anonymous requests are off under AlwaysAllow: 401 once it serves.
      if (status === 401) break;
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 50));
  }
  t.equal(status, 401, 'self-signed server answers and is verifiable with its own CA');
  ac.abort();
  t.equal(await done, 0);
});

t.test('run: --secure-port=0 starts with the listener off and no kubernetes service to publish, then returns 0', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-run-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const lines: string[] = [];
  let isReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => { isReady = resolve; });
  const capture = pino({ level: 'info' }, { write(l: string) { lines.push(l); if (l.includes('apiserver ready')) isReady(); } });
  const { config } = parseApiserverArgs(['--secure-port=0', `--cert-dir=${dir}/certs`, `--data-dir=${dir}/data`]);
  const ac = new AbortController();
  const done = run(config, { log: capture, signal: ac.signal });
  await Promise.race([ready, new Promise((_, reject) => setTimeout(() => reject(new Error(`not ready: ${lines.join('')}`)), 15_000))]);
  const text = lines.join('');
  t.match(text, /apiserver ready: secure serving off/);
  t.match(text, /the kubernetes service and its endpoints are not published/);
  t.notMatch(text, /start-up failed/);
  ac.abort();
  t.equal(await done, 0);
});

t.test('run: a bad option fails start-up with non-zero', async (t) => {
  const { code, stderr: captured } = await runExpectingStartFailure(['--secure-port=0', '--client-ca-file=/nonexistent/ca.crt'], log);
  t.equal(code, 1);
  t.match(captured, /^apiserver: --client-ca-file: cannot read "\/nonexistent\/ca\.crt"/);
  t.equal(captured.trim().split('\n').length, 1, 'one line');
});

const kubectl = findKubectl(33);

t.test('kubectl against the full server', { skip: kubectl ? false : 'kubectl.1.33 not installed' }, async (t) => {
  if (!kubectl) return;
  const s = await startApiserver();
  t.teardown(() => s.stop());
  // execFile (async): the server runs in this process, so the event loop must stay free.
  const k = (...args: string[]) => new Promise<{ code: number; out: string; err: string }>((resolve) => {
    execFile(kubectl, [...args, '--kubeconfig', s.coreconfigPath, '--cache-dir', join(s.dir, 'kcache')], { timeout: 30_000 },
      (e, out, err) => resolve({ code: e ? 1 : 0, out, err }));
  });
  const ns = await k('get', 'namespaces');
  t.equal(ns.code, 0, ns.err);
  t.match(ns.out, /default\s+Active/);
  const raw = await k('get', '--raw', '/readyz?verbose');
  t.match(raw.out, /\[\+\]storage ok/);
});

t.test('corectl apiserver as a child process', async (t) => {
  const s = await startApiserver({ process: true });
  const ca = await readFile(s.caFile);
  const anonymous = await h2request(s.url, { path: '/api/v1/secrets', ca });
  t.equal(anonymous.status, 401, 'default flags: no anonymous cluster-admin (issue 27)');
  const r = await h2request(s.url, { path: '/readyz?verbose', ca, cert: await readFile(s.clientCertFile), key: await readFile(s.clientKeyFile) });
  t.equal(r.status, 200);
  t.match(r.body, /\[\+\]storage ok/);
  const child = s.child;
  await s.stop();
  t.equal(child?.exitCode, 0, 'SIGTERM shuts down cleanly');
  await t.rejects(startApiserver({ process: true, args: ['--token-auth-file=/nonexistent/tokens.csv'] }),
    /exited with code 1[\s\S]*apiserver: --token-auth-file: /, 'a bad option exits non-zero naming it');
});
