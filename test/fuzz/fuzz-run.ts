/**
 * One fuzz run against a real `corectl apiserver` process (LevelDB store, no controllers, so
 * nothing else writes): fixtures are created, then `requests` random cases (cases.ts) go out
 * one at a time over HTTP/1.1 or HTTP/2, and every answer is judged:
 *  - crash: the server process exited;
 *  - 5xx: any answer >= 500 (but the two Kubernetes gives too, isKubernetesOwn500);
 *  - nonStatus: an error answer (>= 400) on an /api or /apis path whose body is not a JSON
 *    Status carrying the same code (HEAD answers have no body and are exempt);
 *  - partialWrite: a write answered with an error that still wrote (the named object exists,
 *    or the fixture's resourceVersion moved or it is being deleted);
 *  - hang: no whole answer within 20 s.
 * A successful write to a fixture refreshes it (and a successful delete recreates it).
 */
import { readFile } from 'node:fs/promises';
import * as http2 from 'node:http2';
import * as https from 'node:https';
import { startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { NS, nextCase, type Fixture, type FuzzCase } from './cases.js';
import { Prng } from './prng.js';
import { SEEDS } from './seeds.js';

export interface FuzzReport {
  seed: number;
  requests: number;
  byStatus: Record<string, number>;
  crashes: number;
  serverErrors: number;
  nonStatus: number;
  partialWrites: number;
  hangs: number;
  /** Up to 20 examples of each kind of failure, for the report. */
  samples: string[];
}

interface Answer { status: number; body: Buffer; headers: Record<string, string | string[] | undefined> }

const FIXTURE_KINDS = ['pods', 'configmaps', 'secrets', 'services', 'endpoints', 'deployments', 'jobs', 'roles', 'leases', 'nodes', 'namespaces', 'persistentvolumeclaims', 'priorityclasses', 'endpointslices'];

export interface FuzzOptions { requests: number; seed: number; log?: (line: string) => void; /** Log every case before it is sent. */ trace?: boolean; /** Log a progress line every this many cases. */ progressEvery?: number }

export async function fuzzRun(o: FuzzOptions): Promise<FuzzReport> {
  const api = await startApiserver({ process: true, args: ['--disable-admission-plugins=ServiceAccount,StorageObjectInUseProtection'] });
  const [ca, cert, key] = await Promise.all([readFile(api.caFile), readFile(api.clientCertFile), readFile(api.clientKeyFile)]);
  const tls = { ca, cert, key };
  let agent = new https.Agent({ ...tls, keepAlive: true, maxSockets: 1 });
  let session = http2.connect(api.url, tls);
  session.on('error', () => undefined);
  const report: FuzzReport = { seed: o.seed, requests: 0, byStatus: {}, crashes: 0, serverErrors: 0, nonStatus: 0, partialWrites: 0, hangs: 0, samples: [] };
  const sample = (s: string): void => { if (report.samples.length < 60) report.samples.push(s); o.log?.(s); };

  const send = (c: Pick<FuzzCase, 'method' | 'path' | 'headers' | 'body'>, h1: boolean): Promise<Answer> => new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('hang')), 20_000);
    const done = (a: Answer): void => { clearTimeout(timer); resolve(a); };
    const fail = (e: Error): void => { clearTimeout(timer); reject(e); };
    if (h1) {
      const req = https.request(`${api.url}${c.path}`, { method: c.method, agent, headers: { ...c.headers, ...(c.body ? { 'content-length': String(c.body.length) } : {}) } }, (res) => {
        // A watch that started is an answer: its events are not judged, so it need not run out.
        if (isWatchStream(res.statusCode ?? 0, res.headers['content-type'])) { done({ status: res.statusCode ?? 0, body: Buffer.alloc(0), headers: res.headers }); req.destroy(); return; }
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => done({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), headers: res.headers }));
        res.on('error', fail);
      });
      req.on('error', fail);
      req.end(c.body);
      return;
    }
    if (session.closed || session.destroyed) { session = http2.connect(api.url, tls); session.on('error', () => undefined); }
    let req: http2.ClientHttp2Stream;
    try {
      req = session.request({ ':method': c.method, ':path': c.path, ...c.headers }, { endStream: !c.body });
    } catch (e) { fail(e as Error); return; }
    const chunks: Buffer[] = [];
    let status = 0, headers: Record<string, string | string[] | undefined> = {};
    req.on('response', (h) => {
      status = Number(h[':status']); headers = h;
      if (isWatchStream(status, h['content-type'])) { done({ status, body: Buffer.alloc(0), headers }); req.close(); }
    });
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => done({ status, body: Buffer.concat(chunks), headers }));
    req.on('error', fail);
    if (c.body) req.end(c.body);
  });
  const admin = (method: string, path: string, body?: unknown, accept = 'application/json'): Promise<Answer> =>
    send({ method, path, headers: { accept, ...(body ? { 'content-type': 'application/json' } : {}) }, ...(body ? { body: Buffer.from(JSON.stringify(body)) } : {}) }, false);

  const fixtures: Fixture[] = [];
  /** Fixtures that could not be had, and until when their cases are skipped. */
  const retiredUntil = new Map<Fixture, number>();
  const makeFixture = async (kind: string, i: number): Promise<Fixture | undefined> => {
    const s = SEEDS[kind]!;
    const name = `fixture-${kind}-${i}`;
    const a = await admin('POST', s.collection(NS), s.make(name, NS));
    if (a.status !== 201) { sample(`fixture ${kind}: ${a.status} ${a.body.toString().slice(0, 200)}`); return undefined; }
    const path = `${s.collection(NS)}/${name}`;
    const pb = await admin('GET', path, undefined, 'application/vnd.kubernetes.protobuf');
    return { kind, path, object: JSON.parse(a.body.toString()), ...(pb.status === 200 ? { protobuf: pb.body } : {}) };
  };
  /** Makes `f` current: the object as it is, or made anew; false when it cannot be had now. */
  const refresh = async (f: Fixture): Promise<boolean> => {
    const a = await admin('GET', f.path);
    if (a.status === 200) {
      const obj = JSON.parse(a.body.toString()) as { metadata: { deletionTimestamp?: string } };
      if (!obj.metadata.deletionTimestamp) { f.object = obj as Record<string, unknown>; return true; }
      // Being deleted (a finalizer holds it): let it go, then make a new one.
      await send({ method: 'PATCH', path: f.path, headers: { 'content-type': 'application/merge-patch+json' }, body: Buffer.from('{"metadata":{"finalizers":null}}') }, false);
    }
    for (let i = 0; i < 50; i++) {
      const g = await admin('GET', f.path);
      if (g.status === 404) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const name = f.path.slice(f.path.lastIndexOf('/') + 1);
    const c = await admin('POST', SEEDS[f.kind]!.collection(NS), SEEDS[f.kind]!.make(name, NS));
    if (c.status !== 201) return false;
    f.object = JSON.parse(c.body.toString());
    return true;
  };
  const rvOf = (o: Record<string, unknown>): string => String((o['metadata'] as { resourceVersion?: string })?.resourceVersion ?? '');

  try {
    if ((await admin('POST', '/api/v1/namespaces', { metadata: { name: NS } })).status !== 201) throw new Error('cannot create the fuzz namespace');
    for (const kind of FIXTURE_KINDS) for (let i = 0; i < 2; i++) { const f = await makeFixture(kind, i); if (f) fixtures.push(f); }
    const rng = new Prng(o.seed);
    for (let n = 0; n < o.requests; n++) {
      const c = nextCase(rng, fixtures);
      if (o.trace) o.log?.(`#${n} ${c.label} ${c.method} ${c.path.slice(0, 120)} ${c.body?.length ?? 0} B`);
      if (o.progressEvery && n > 0 && n % o.progressEvery === 0) o.log?.(`progress: ${n} cases, ${report.serverErrors} 5xx, ${report.partialWrites} partial writes, ${report.nonStatus} non-Status, ${report.hangs} hangs`);
      const h1 = rng.chance(0.5);
      // The fixture as it is now (an earlier deletecollection may have taken it: make it anew).
      let before = '';
      if (c.expectOnError?.unchanged) {
        const f = c.expectOnError.unchanged;
        const g = await admin('GET', f.path);
        const now = g.status === 200 ? JSON.parse(g.body.toString()) as Record<string, unknown> : undefined;
        if ((retiredUntil.get(f) ?? 0) > Date.now()) continue;
        if (!now || (now['metadata'] as { deletionTimestamp?: string }).deletionTimestamp) {
          // Made anew, or still going (a graceful delete, a namespace no controller finalizes):
          // then its cases are skipped for a minute instead of waiting for it each time.
          if (!await refresh(f)) { retiredUntil.set(f, Date.now() + 60_000); continue; }
        } else f.object = now;
        before = rvOf(f.object);
      }
      let a: Answer;
      try {
        a = await send(c, h1);
      } catch (e) {
        if (api.child?.exitCode !== null && api.child?.exitCode !== undefined) { report.crashes++; sample(`CRASH after ${c.label} ${c.method} ${c.path}`); break; }
        if ((e as Error).message === 'hang') { report.hangs++; sample(`HANG ${c.label} ${h1 ? 'h1' : 'h2'} ${c.method} ${c.path}`); }
        // A transport error (the server reset a broken request) is an answer too; go on with
        // new connections (a hung HTTP/1.1 socket would hold up every later request).
        session.destroy();
        agent.destroy();
        agent = new https.Agent({ ...tls, keepAlive: true, maxSockets: 1 });
        continue;
      }
      if (o.trace) o.log?.(`  -> ${a.status} ${a.body.length} B, heap ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MiB`);
      report.requests++;
      report.byStatus[a.status] = (report.byStatus[a.status] ?? 0) + 1;
      const where = `${c.label} ${h1 ? 'h1' : 'h2'} ${c.method} ${c.path.slice(0, 160)}`;
      // A HEAD answer has no body to tell why: the same request as a GET does.
      const judged = a.status >= 500 && c.method === 'HEAD' ? await send({ ...c, method: 'GET' }, h1).catch(() => a) : a;
      if (a.status >= 500 && !isKubernetesOwn500(judged)) { report.serverErrors++; sample(`5xx ${a.status} ${where}: ${a.body.toString().slice(0, 300)}`); }
      // An API path as the server reads it (dot segments, %2e%2e too, resolved first).
      const apiPath = /^\/apis?(\/|$)/.test(servedPath(c.path));
      if (a.status >= 400 && c.method !== 'HEAD' && apiPath && a.status !== 431) {
        let ok = false;
        try {
          const s = JSON.parse(a.body.toString()) as { kind?: string; code?: number; apiVersion?: string };
          ok = s.kind === 'Status' && s.apiVersion === 'v1' && s.code === a.status;
        } catch { ok = false; }
        if (!ok) { report.nonStatus++; sample(`non-Status ${a.status} ${where}: ${a.body.toString().slice(0, 200)}`); }
      }
      const expect = c.expectOnError;
      if (expect && a.status >= 400) {
        if (expect.absent) {
          const g = await admin('GET', expect.absent);
          if (g.status === 200) { report.partialWrites++; sample(`PARTIAL ${a.status} ${where}: ${expect.absent} exists; answer ${a.body.toString().slice(0, 200)}`); }
        }
        if (expect.unchanged) {
          const g = await admin('GET', expect.unchanged.path);
          const now = g.status === 200 ? JSON.parse(g.body.toString()) as Record<string, unknown> : undefined;
          if (!now || rvOf(now) !== before || (now['metadata'] as { deletionTimestamp?: string }).deletionTimestamp) {
            report.partialWrites++;
            sample(`PARTIAL ${a.status} ${where}: ${expect.unchanged.path} ${now ? `rv ${before} -> ${rvOf(now)}` : `gone (${g.status})`}; answer ${a.body.toString().slice(0, 200)}`);
            await refresh(expect.unchanged);
          }
        }
      } else if (expect?.unchanged && a.status < 300) {
        await refresh(expect.unchanged);
        // Accepted mutants may grow a fixture (a doubled list, long strings) write after write:
        // past 256 KiB it is made anew, so the run's own memory stays bounded.
        if (JSON.stringify(expect.unchanged.object).length > 256 * 1024) {
          await send({ method: 'DELETE', path: expect.unchanged.path, headers: {} }, false);
          await refresh(expect.unchanged);
        }
      }
      if (api.child?.exitCode !== null && api.child?.exitCode !== undefined) { report.crashes++; sample(`CRASH after ${where}`); break; }
    }
  } finally {
    session.destroy();
    agent.destroy();
    await api.stop();
  }
  return report;
}

/**
 * Two 5xx answers Kubernetes gives too, so they are not counted: a create that sets
 * metadata.resourceVersion gets its storage layer's plain error, which its handler turns into a
 * 500 without a reason; a read at a resourceVersion the store has not reached is a 504 Timeout
 * (ResourceVersionTooLarge) after the watch cache's wait.
 */
function isKubernetesOwn500(a: Answer): boolean {
  if (a.status !== 500 && a.status !== 504) return false;
  try {
    const s = JSON.parse(a.body.toString()) as { message?: string; reason?: string; details?: { causes?: Array<{ reason?: string }> } };
    if (a.status === 504) return s.reason === 'Timeout' && s.details?.causes?.[0]?.reason === 'ResourceVersionTooLarge';
    return s.message === 'resourceVersion should not be set on objects to be created' && !s.reason;
  } catch { return false; }
}

/** A watch answered 200 with an event stream (its events are not judged by this oracle). */
function isWatchStream(status: number, contentType: string | string[] | undefined): boolean {
  return status === 200 && typeof contentType === 'string' && contentType.includes('stream=watch');
}

/** The path the server routes: the WHATWG URL parser's, as the request chain reads it. */
function servedPath(target: string): string {
  try { return new URL(target, 'https://apiserver.invalid').pathname; } catch { return target; }
}

export function formatReport(r: FuzzReport): string {
  const statuses = Object.entries(r.byStatus).sort().map(([s, n]) => `${s}:${n}`).join(' ');
  return [`fuzz seed ${r.seed}: ${r.requests} requests (${statuses})`,
    `crashes ${r.crashes}, 5xx ${r.serverErrors}, non-Status errors ${r.nonStatus}, partial writes ${r.partialWrites}, hangs ${r.hangs}`,
    ...r.samples.map((s) => `  ${s}`)].join('\n');
}

export type { StartedApiserver };
