import { get as httpGet } from 'node:http';
import { request } from 'node:https';
import t from 'tap';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { startServers } from '../../src/daemons/scheduler/servers.js';
import { parseSchedulerArgs } from '../../src/flags/scheduler.js';
import { freePort } from '../helpers/apiserver.js';
import { delegatedAccess, type ReviewCreate } from '../../src/auth/delegated.js';
import type { KubeObject } from '../../src/api/resources/types.js';

function get(port: number, path: string, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, rejectUnauthorized: false, ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}) }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => { body += d.toString(); });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('secure port: health is open, metrics need a client certificate; readiness follows setReady', async (t) => {
  const ac = new AbortController();
  const registry = new Registry();
  const securePort = await freePort();
  const s = await startServers({ port: 0, securePort, bindAddress: '127.0.0.1', profiling: false }, registry, pino({ level: 'silent' }), ac.signal);
  t.teardown(async () => { ac.abort(); await s.close(); });
  t.equal(s.httpPort, 0);
  t.equal(s.httpsPort, securePort);
  t.same(await get(securePort, '/healthz'), { status: 200, body: 'ok' });
  t.equal((await get(securePort, '/readyz')).status, 500);
  s.setReady(true);
  t.equal((await get(securePort, '/readyz')).status, 200);
  t.equal((await get(securePort, '/metrics')).status, 401);
  t.equal((await get(securePort, '/debug/pprof/')).status, 401);
  t.equal((await get(securePort, '/debug/pprof/heap')).status, 401, 'no heap snapshot without a client certificate');
  s.setHealthy(false, 'leader election lost');
  const h = await get(securePort, '/livez');
  t.equal(h.status, 500);
  t.match(h.body, /leader election lost/);
});

// Delegated authentication and authorization (as Kubernetes' components): a bearer token is
// checked by TokenReview, the path by SubjectAccessReview; health paths need neither, anonymous
// requests are asked about like anyone (and denied by RBAC), a refused token is a 401.
t.test('secure port with delegated access: TokenReview, then SubjectAccessReview per path', async (t) => {
  const reviews: KubeObject[] = [];
  const create: ReviewCreate = async <T extends KubeObject>(ref: { resource: string }, obj: KubeObject): Promise<T> => {
    reviews.push(obj);
    const spec = (obj as { spec: Record<string, unknown> }).spec;
    if (ref.resource === 'tokenreviews') {
      const ok = spec.token === 'good' || spec.token === 'monitor';
      return { ...obj, status: ok ? { authenticated: true, user: { username: spec.token === 'good' ? 'alice' : 'prometheus', groups: ['system:authenticated'] } } : { authenticated: false } } as unknown as T;
    }
    return { ...obj, status: { allowed: spec.user === 'prometheus' } } as unknown as T;
  };
  const ac = new AbortController();
  const securePort = await freePort();
  const s = await startServers({ port: 0, securePort, bindAddress: '127.0.0.1', profiling: false, access: delegatedAccess({ create, clientCa: false }) },
    new Registry(), pino({ level: 'silent' }), ac.signal);
  t.teardown(async () => { ac.abort(); await s.close(); });
  s.setReady(true);
  for (const p of ['/healthz', '/livez', '/readyz']) t.equal((await get(securePort, p)).status, 200, `${p} is always allowed`);
  t.equal(reviews.length, 0, 'health paths ask nobody');
  const anon = await get(securePort, '/metrics');
  t.equal(anon.status, 403);
  t.match(anon.body, 'forbidden: User "system:anonymous" cannot get path "/metrics"');
  t.equal((await get(securePort, '/metrics', 'bad')).status, 401, 'a token the API server refuses');
  const alice = await get(securePort, '/metrics', 'good');
  t.equal(alice.status, 403);
  t.match(alice.body, 'User "alice" cannot get path "/metrics"');
  t.equal((await get(securePort, '/metrics', 'monitor')).status, 200, 'allowed by the SubjectAccessReview');
  const sar = reviews.find((r) => r.kind === 'SubjectAccessReview' && (r as { spec: { user: string } }).spec.user === 'prometheus');
  t.same((sar as { spec: { nonResourceAttributes: unknown } }).spec.nonResourceAttributes, { path: '/metrics', verb: 'get' });
});

function getHttp(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    httpGet({ host: '127.0.0.1', port, path }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => { body += d.toString(); });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

function getHttpFull(port: number, path: string): Promise<{ status: number; location?: string }> {
  return new Promise((resolve, reject) => {
    httpGet({ host: '127.0.0.1', port, path }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ...(res.headers.location ? { location: res.headers.location } : {}) }));
    }).on('error', reject);
  });
}

t.test('the insecure port serves /debug/pprof only with --profiling (issue 27: it is unauthenticated)', async (t) => {
  for (const profiling of [false, true]) {
    const ac = new AbortController();
    const port = await freePort();
    const s = await startServers({ port, securePort: 0, bindAddress: '127.0.0.1', profiling }, new Registry(), pino({ level: 'silent' }), ac.signal);
    try {
      t.equal(s.httpPort, port);
      t.equal((await getHttp(port, '/healthz')).status, 200, 'the insecure port keeps serving health');
      const index = await getHttp(port, '/debug/pprof/');
      const profile = await getHttp(port, '/debug/pprof/profile?seconds=1');
      if (profiling) {
        t.equal(index.status, 200, '--profiling=true: the index');
        t.equal(profile.status, 200, '--profiling=true: a CPU profile');
        // The shared implementation (src/util/pprof.ts), as the API server's and the controller manager's.
        t.match(index.body, '<a href="heap">heap</a>: not available: 501', 'the shared index; no heap snapshot without authentication');
        const cpu = JSON.parse(profile.body) as { nodes?: unknown[]; startTime?: number };
        t.ok(Array.isArray(cpu.nodes) && typeof cpu.startTime === 'number', 'a .cpuprofile document');
        t.equal((await getHttp(port, '/debug/pprof/heap')).status, 501, 'the insecure port never hands out memory contents');
        t.equal((await getHttp(port, '/debug/pprof/goroutine')).status, 501, "Go's other profiles: 501 saying so");
        t.equal((await getHttp(port, '/debug/pprof/profile?seconds=301')).status, 400, 'longer than the limit: 400');
        const moved = await getHttpFull(port, '/debug/pprof');
        t.equal(moved.status, 301, '/debug/pprof redirects to the index');
        t.equal(moved.location, '/debug/pprof/');
      } else {
        t.same(index, { status: 404, body: '404 page not found\n' }, '--profiling=false: no index');
        t.same(profile, { status: 404, body: '404 page not found\n' }, '--profiling=false: no profile');
      }
    } finally {
      ac.abort();
      await s.close();
    }
  }
  t.equal(parseSchedulerArgs([]).config.profiling, true, 'the default stays --profiling=true, as the controller manager\'s');
});

// The secure port, caller authorized by SubjectAccessReview: the shared pprof handler offers the
// heap snapshot too (the first bytes are enough to know it is one).
t.test('secure port, authorized: the pprof index offers a heap snapshot, and it is one', async (t) => {
  const create: ReviewCreate = async <T extends KubeObject>(ref: { resource: string }, obj: KubeObject): Promise<T> => {
    const spec = (obj as { spec: Record<string, unknown> }).spec;
    if (ref.resource === 'tokenreviews') return { ...obj, status: { authenticated: spec.token === 'admin', user: { username: 'admin', groups: ['system:masters'] } } } as unknown as T;
    return { ...obj, status: { allowed: spec.user === 'admin' } } as unknown as T;
  };
  const ac = new AbortController();
  const securePort = await freePort();
  const s = await startServers({ port: 0, securePort, bindAddress: '127.0.0.1', profiling: true, access: delegatedAccess({ create, clientCa: false }) },
    new Registry(), pino({ level: 'silent' }), ac.signal);
  t.teardown(async () => { ac.abort(); await s.close(); });
  t.equal((await get(securePort, '/debug/pprof/heap')).status, 403, 'anonymous: refused by the SubjectAccessReview');
  const index = await get(securePort, '/debug/pprof/', 'admin');
  t.equal(index.status, 200);
  t.match(index.body, /<a href="heap">heap<\/a>: V8 heap snapshot/);
  const head = await new Promise<{ status: number; type: string; first: string }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: securePort, path: '/debug/pprof/heap', rejectUnauthorized: false, headers: { authorization: 'Bearer admin' } }, (res) => {
      res.once('data', (d: Buffer) => { resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), first: d.toString('utf8', 0, 20) }); req.destroy(); });
      res.once('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), first: '' }));
    });
    req.on('error', (e) => { if (!req.destroyed) reject(e); });
    req.end();
  });
  t.equal(head.status, 200);
  t.equal(head.type, 'application/json');
  t.match(head.first, /^\{"snapshot"/, 'a V8 heap snapshot');
});
