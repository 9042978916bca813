// The operator's endpoints on the API server (issue 30, items 4 and 5), under
// --authorization-mode=RBAC with the bootstrap policy: /logs/ (a listing and the files of
// --logs-dir, nothing outside it) and /debug/pprof/ (index, CPU profile, heap snapshot), for
// cluster-admin only; a user with the default roles gets 403; with --profiling=false and
// --enable-logs-handler=false the paths are unknown (404).
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import * as http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { h2request, startApiserver, type StartedApiserver } from '../helpers/apiserver.js';

const SECRET = 'not-a-log-secret-5b1c';

interface Creds { ca: Buffer; cert: string | Buffer; key: string | Buffer }

async function adminCreds(s: StartedApiserver): Promise<Creds> {
  return { ca: await readFile(s.caFile), cert: await readFile(s.clientCertFile), key: await readFile(s.clientKeyFile) };
}

const get = (s: StartedApiserver, c: Creds, path: string) => h2request(s.url, { path, ...c, timeoutMs: 20_000 });

/** The status and the first bytes of a (large) body; the stream is closed once they arrived. */
function head(s: StartedApiserver, c: Creds, path: string, bytes: number): Promise<{ status: number; type: string; start: string }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(s.url, c);
    session.on('error', reject);
    const req = session.request({ ':path': path });
    const timer = setTimeout(() => { session.destroy(); reject(new Error(`${path} timed out`)); }, 60_000);
    let status = 0, type = '', buf = Buffer.alloc(0);
    const done = (): void => { clearTimeout(timer); session.destroy(); resolve({ status, type, start: buf.toString('utf8', 0, Math.min(bytes, buf.length)) }); };
    req.on('response', (h) => { status = Number(h[':status']); type = String(h['content-type']); });
    req.on('data', (d: Buffer) => { buf = Buffer.concat([buf, d]); if (buf.length >= bytes) done(); });
    req.on('end', done);
    req.on('error', (e) => { clearTimeout(timer); session.destroy(); reject(e); });
    req.end();
  });
}

t.test('/logs and /debug/pprof under RBAC', async (t) => {
  const base = await mkdtemp(join(tmpdir(), 'corectl-logs-'));
  t.teardown(() => rm(base, { recursive: true, force: true }));
  const logs = join(base, 'logs');
  const outside = join(base, 'outside');
  await mkdir(join(logs, 'sub', 'dir'), { recursive: true });
  await mkdir(outside);
  await writeFile(join(logs, 'server.log'), '{"level":30,"msg":"hello"}\n<script>alert(1)</script>\n');
  await writeFile(join(logs, 'a b.log'), 'spaced\n');
  await writeFile(join(logs, 'sub', 'dir', 'x.log'), 'deep\n');
  await writeFile(join(logs, 'sub', 'inside-target.log'), 'inside\n');
  await writeFile(join(outside, 'secret.txt'), SECRET);
  await writeFile(join(base, 'secret.txt'), SECRET);
  await symlink(join(outside, 'secret.txt'), join(logs, 'out.log'));
  await symlink(outside, join(logs, 'dirlink'));
  await symlink('../../secret.txt', join(logs, 'sub', 'rel.log'));
  await symlink('inside-target.log', join(logs, 'sub', 'in.log'));

  const s = await startApiserver({ args: ['--authorization-mode=RBAC', `--logs-dir=${logs}`, '--enable-api-docs-ui'] });
  t.teardown(() => s.stop());
  const admin = await adminCreds(s);
  const alicePair = await s.issueClient('alice', ['developers']);
  const alice: Creds = { ca: admin.ca, cert: alicePair.certPem, key: alicePair.keyPem };

  await t.test('an admin lists and reads the log directory', async (t) => {
    const r0 = await get(s, admin, '/logs');
    t.equal(r0.status, 301);
    t.equal(r0.headers['location'], '/logs/');
    const list = await get(s, admin, '/logs/');
    t.equal(list.status, 200);
    t.match(list.headers['content-type'], /^text\/html/);
    t.match(list.headers['content-security-policy'], /sandbox/);
    for (const link of ['<a href="server.log">server.log</a>', '<a href="a%20b.log">a b.log</a>', '<a href="sub/">sub/</a>']) t.ok(list.body.includes(link), link);
    const file = await get(s, admin, '/logs/server.log');
    t.equal(file.status, 200);
    t.equal(file.body, '{"level":30,"msg":"hello"}\n<script>alert(1)</script>\n');
    t.equal(file.headers['content-type'], 'text/plain; charset=utf-8', 'a log is never served as a page');
    t.equal(file.headers['x-content-type-options'], 'nosniff');
    t.equal((await get(s, admin, '/logs/a%20b.log')).body, 'spaced\n');
    t.equal((await get(s, admin, '/logs/sub')).headers['location'], '/logs/sub/', 'a directory without its slash is redirected');
    t.match((await get(s, admin, '/logs/sub/')).body, /<a href="dir\/">dir\/<\/a>/);
    t.equal((await get(s, admin, '/logs/sub/dir/x.log')).body, 'deep\n');
    t.equal((await get(s, admin, '/logs/sub/in.log')).body, 'inside\n', 'a symlink staying inside is followed');
    t.equal((await get(s, admin, '/logs/missing.log')).status, 404);
    t.equal((await h2request(s.url, { path: '/logs/server.log', method: 'DELETE', ...admin })).status, 405);
  });

  await t.test('no way out of the log directory', async (t) => {
    const attempts: Array<[string, number[]]> = [
      ['/logs/../secret.txt', [404]],
      ['/logs/%2e%2e/secret.txt', [404]],
      ['/logs/%2E%2E/secret.txt', [404]],
      ['/logs/.%2e/secret.txt', [404]],
      ['/logs/..%2fsecret.txt', [404]],
      ['/logs/%2e%2e%2fsecret.txt', [404]],
      ['/logs/sub/..%2f..%2fsecret.txt', [404]],
      ['/logs/sub/%2e%2e%2f%2e%2e%2fsecret.txt', [404]],
      ['/logs/%252e%252e/secret.txt', [404]],
      ['/logs/%252e%252e%252fsecret.txt', [404]],
      ['/logs/..%5csecret.txt', [404]],
      ['/logs/%2fetc%2fpasswd', [404]],
      ['/logs//etc/passwd', [404]],
      ['/logs/server.log%00', [404]],
      ['/logs/%00', [404]],
      ['/logs/%ff', [404]],
      ['/logs/out.log', [403]],
      ['/logs/dirlink/', [403]],
      ['/logs/dirlink/secret.txt', [403]],
      ['/logs/sub/rel.log', [403]],
    ];
    for (const [path, codes] of attempts) {
      const r = await get(s, admin, path);
      t.ok(codes.includes(r.status), `${path}: ${r.status}`);
      t.notOk(r.body.includes(SECRET), `${path}: nothing from outside`);
    }
    // Over HTTP/1.1 too, where the request line carries the raw target.
    const { h1request } = await import('../helpers/apiserver.js');
    for (const path of ['/logs/%2e%2e/secret.txt', '/logs/..%2fsecret.txt', '/logs/out.log']) {
      const r = await h1request(s.url, { path, ...admin });
      t.ok([403, 404].includes(r.status), `HTTP/1.1 ${path}: ${r.status}`);
      t.notOk(r.body.includes(SECRET));
    }
  });

  await t.test('pprof: index, a CPU profile Chrome DevTools loads, a heap snapshot', async (t) => {
    const r0 = await get(s, admin, '/debug/pprof');
    t.equal(r0.status, 301);
    const idx = await get(s, admin, '/debug/pprof/');
    t.equal(idx.status, 200);
    t.match(idx.body, /<a href="profile">profile<\/a>/);
    t.match(idx.body, /<a href="heap">heap<\/a>: V8 heap snapshot/);
    const prof = await get(s, admin, '/debug/pprof/profile?seconds=1');
    t.equal(prof.status, 200);
    t.match(prof.headers['content-disposition'], /profile\.cpuprofile/);
    const p = JSON.parse(prof.body) as { nodes: Array<{ callFrame: { functionName: string } }>; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] };
    // The .cpuprofile shape DevTools reads: nodes with call frames, samples and their time deltas.
    t.ok(p.nodes.length > 0 && typeof p.nodes[0]!.callFrame.functionName === 'string', 'nodes with call frames');
    t.ok(p.endTime > p.startTime && p.samples.length === p.timeDeltas.length, 'samples and time deltas');
    const heap = await head(s, admin, '/debug/pprof/heap', 64);
    t.equal(heap.status, 200);
    t.equal(heap.type, 'application/json');
    t.match(heap.start, /^\{"snapshot":\{"meta":/, 'a V8 heap snapshot');
    const long = await get(s, admin, '/debug/pprof/profile?seconds=600');
    t.equal(long.status, 400, 'a profile longer than the request timeout is refused');
    t.equal((await get(s, admin, '/debug/pprof/goroutine')).status, 501);
  });

  await t.test('a user with the default roles gets 403', async (t) => {
    for (const path of ['/logs/', '/logs/server.log', '/debug/pprof/', '/debug/pprof/profile?seconds=1', '/debug/pprof/heap', '/api-docs-ui/']) {
      const r = await get(s, alice, path);
      t.equal(r.status, 403, path);
      t.equal(JSON.parse(r.body).reason, 'Forbidden', `${path}: a Status`);
    }
    t.equal((await get(s, alice, '/version')).status, 200, 'while discovery stays open to her');
  });

  await t.test('a user bound to cluster-admin (not in system:masters) gets them', async (t) => {
    const bobPair = await s.issueClient('bob');
    const bob: Creds = { ca: admin.ca, cert: bobPair.certPem, key: bobPair.keyPem };
    t.equal((await get(s, bob, '/logs/')).status, 403);
    const G = 'rbac.authorization.k8s.io';
    const created = await h2request(s.url, {
      path: `/apis/${G}/v1/clusterrolebindings`, method: 'POST', ...admin, headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ apiVersion: `${G}/v1`, kind: 'ClusterRoleBinding', metadata: { name: 'bob-admin' }, roleRef: { apiGroup: G, kind: 'ClusterRole', name: 'cluster-admin' }, subjects: [{ kind: 'User', apiGroup: G, name: 'bob' }] }),
    });
    t.equal(created.status, 201);
    const deadline = Date.now() + 15_000;
    let status = 0;
    while ((status = (await get(s, bob, '/logs/')).status) !== 200 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    t.equal(status, 200, '/logs/ once the binding is seen');
    t.equal((await get(s, bob, '/debug/pprof/')).status, 200);
    t.equal((await get(s, bob, '/api-docs-ui/')).status, 200);
  });
});

t.test('--profiling=false and --enable-logs-handler=false: 404', async (t) => {
  const s = await startApiserver({ args: ['--profiling=false', '--enable-logs-handler=false'] });
  t.teardown(() => s.stop());
  const admin = await adminCreds(s);
  for (const path of ['/logs', '/logs/', '/debug/pprof', '/debug/pprof/', '/debug/pprof/profile?seconds=1', '/debug/pprof/heap', '/api-docs-ui/']) {
    t.equal((await get(s, admin, path)).status, 404, path);
  }
});
