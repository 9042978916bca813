/**
 * The cost of RBAC authorization (issue 28's aim: GET and create throughput under Node,RBAC with
 * 1 000 RoleBindings present ≥ 90 % of the same run under AlwaysAllow). Two `corectl apiserver`
 * children (LevelDB, TLS+HTTP/2) hold the same objects: namespace `bench`, 1 000 RoleBindings in
 * it naming other users (the worst case for a scan: all in the request's namespace), 50 more
 * naming groups, and one RoleBinding giving the bench user (a client certificate outside
 * system:masters, so every request is decided by RBAC) get and create on configmaps. One runs
 * --authorization-mode=AlwaysAllow, the other Node,RBAC (RBAC alone while Node is not built).
 * Rows: configmap GET and create at 50 streams, the two servers' runs interleaved so the
 * machine's fast and slow seconds hit both alike; throughput and server CPU per request side by
 * side with the ratio.
 * A last row times the authorization chain (system:masters link + RBAC) in process over a
 * LevelDB store with the same bindings: the cost per decision without the machine's noise.
 * Run: node dist/bench/rbac-authz.bench.js   (about 30 s with the defaults).
 * Environment: RBACBENCH_ROW_MS (each server's time per row, default 4000), RBACBENCH_ROUNDS
 * (interleaved rounds, default 4), RBACBENCH_BINDINGS (default 1000), RBACBENCH_PIN=0 (no taskset).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as http2 from 'node:http2';
import type { KubeObject } from '../src/api/resources/types.js';
import type { AuthorizationAttributes } from '../src/auth/authorizer.js';
import { rbacIndexFor } from '../src/auth/authorizers/rbac/policy-index.js';
import { RbacAuthorizer } from '../src/auth/authorizers/rbac/rbac-authorizer.js';
import { PrivilegedGroupsAuthorizer } from '../src/auth/privileged-groups.js';
import { UnionAuthorizer } from '../src/auth/union-authorizer.js';
import { MODE_FACTORIES } from '../src/daemons/apiserver/authorizer-modes.js';
import { openLevelBackend } from '../src/storage/leveldb/level-backend.js';
import { createObjectStore } from '../src/storage/object-store.js';
import { createCA, issueCert, writePemFile } from '../src/util/pki.js';
import { canPin, freePort, pinSelf, procStat, spawnReady, type BenchPki, type Child } from './lib/children.js';
import { closeSessions, interleave, mergeLoads, openSessions, percentile, runLoad, send, type LoadResult, type TlsClient } from './lib/h2-load.js';
import { apiserverArgs, configMapBody, createBenchNamespace } from './lib/apiserver-child.js';

const ROW_MS = Number(process.env['RBACBENCH_ROW_MS'] ?? 4000);
const ROUNDS = Number(process.env['RBACBENCH_ROUNDS'] ?? 4);
const BINDINGS = Number(process.env['RBACBENCH_BINDINGS'] ?? 1000);
const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const JSON_CT = { 'content-type': 'application/json', accept: 'application/json' };
const RBAC_MODES = 'Node' in MODE_FACTORIES ? 'Node,RBAC' : 'RBAC';
const G = 'rbac.authorization.k8s.io';

interface Server { label: string; child: Child; url: string; admin: http2.ClientHttp2Session[]; user: http2.ClientHttp2Session[] }

const cpuOf = (c: Child): number => {
  const t = c.proc.pid === undefined ? undefined : procStat(c.proc.pid);
  return t ? t.user + t.sys : Number.NaN;
};

async function post(s: http2.ClientHttp2Session, path: string, body: unknown): Promise<void> {
  const r = await send(s, { path, method: 'POST', headers: JSON_CT, body: JSON.stringify(body) });
  if (r.status !== 201) throw new Error(`${path}: HTTP ${r.status} ${r.body.toString().slice(0, 300)}`);
}

const binding = (name: string, role: string, subjects: unknown[]): KubeObject => ({
  apiVersion: `${G}/v1`, kind: 'RoleBinding', metadata: { name, namespace: 'bench' }, roleRef: { apiGroup: G, kind: 'ClusterRole', name: role }, subjects,
});

/** The same objects on each server: the bench user's grant and BINDINGS + 50 others. */
async function populate(s: Server): Promise<void> {
  const a = s.admin[0]!;
  await createBenchNamespace(a, 'bench');
  await post(a, `/apis/${G}/v1/clusterroles`, { apiVersion: `${G}/v1`, kind: 'ClusterRole', metadata: { name: 'bench-configmaps' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'create'] }] });
  await post(a, `/apis/${G}/v1/clusterroles`, { apiVersion: `${G}/v1`, kind: 'ClusterRole', metadata: { name: 'bench-other' }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }] });
  const path = `/apis/${G}/v1/namespaces/bench/rolebindings`;
  const r = await runLoad({
    sessions: s.admin, concurrency: 32, durationMs: 120_000, maxOps: BINDINGS + 50,
    request: (i) => ({
      path, method: 'POST', headers: JSON_CT,
      body: JSON.stringify(i < BINDINGS
        ? binding(`user-${i}`, 'bench-other', [{ kind: 'User', apiGroup: G, name: `user-${i}` }, { kind: 'ServiceAccount', name: `sa-${i}` }])
        : binding(`group-${i}`, 'bench-other', [{ kind: 'Group', apiGroup: G, name: `group-${i}` }])),
    }),
  });
  if (r.errors) throw new Error(`creating bindings: ${r.errors} errors, ${r.firstError ?? ''}`);
  await post(a, path, binding('bench-user', 'bench-configmaps', [{ kind: 'User', apiGroup: G, name: 'bench-user' }]));
}

async function start(label: string, modes: string, dir: string, pki: BenchPki, user: TlsClient, cpu: number | undefined): Promise<Server> {
  const port = await freePort();
  const url = `https://127.0.0.1:${port}`;
  const args = [...apiserverArgs(CLI, join(dir, label), pki, port), `--authorization-mode=${modes}`, '--disable-admission-plugins=ServiceAccount'];
  const child = await spawnReady(args, cpu, url, pki.client, '/healthz');
  return { label, child, url, admin: await openSessions(url, pki.client, 2), user: await openSessions(url, user, 2) };
}

/** Waits until the bench user's requests are allowed (the RBAC caches have the bindings). */
async function waitAllowed(s: Server): Promise<void> {
  const end = Date.now() + 30_000;
  for (;;) {
    const r = await send(s.user[0]!, { path: '/api/v1/namespaces/bench/configmaps/probe', headers: JSON_CT });
    if (r.status === 200) return;
    if (Date.now() > end) throw new Error(`${s.label}: the bench user is not allowed: HTTP ${r.status} ${r.body.toString().slice(0, 300)}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

interface Measured { load: LoadResult; cpu: number }

function mergeMeasured(parts: readonly Measured[]): Measured {
  return { load: mergeLoads(parts.map((p) => p.load)), cpu: parts.reduce((n, p) => n + p.cpu, 0) };
}

async function measured(s: Server, fn: () => Promise<LoadResult>): Promise<Measured> {
  const c0 = cpuOf(s.child);
  const load = await fn();
  return { load, cpu: cpuOf(s.child) - c0 };
}

function line(what: string, base: Measured, rbac: Measured): string {
  const rate = (m: Measured): number => m.load.ops / m.load.seconds;
  const us = (m: Measured): number => 1e6 * m.cpu / Math.max(1, m.load.ops);
  const p = (m: Measured, q: number): string => percentile(m.load.lat, q).toFixed(2);
  const errs = base.load.errors + rbac.load.errors ? `; errors ${base.load.errors}/${rbac.load.errors} ${base.load.firstError ?? rbac.load.firstError ?? ''}` : '';
  return `${what}: AlwaysAllow ${rate(base).toFixed(0)}/s (p50 ${p(base, 50)} p99 ${p(base, 99)} ms, ${us(base).toFixed(0)} µs CPU/req) | ` +
    `${RBAC_MODES} ${rate(rbac).toFixed(0)}/s (p50 ${p(rbac, 50)} p99 ${p(rbac, 99)} ms, ${us(rbac).toFixed(0)} µs CPU/req) | ` +
    `throughput ${(100 * rate(rbac) / rate(base)).toFixed(1)}%, CPU-per-request basis ${(100 * us(base) / us(rbac)).toFixed(1)}%${errs}`;
}

/** µs per decision of the chain [system:masters, RBAC] for the bench user, with the bench's bindings in a LevelDB store. */
async function inProcess(dir: string): Promise<string> {
  const backend = await openLevelBackend({ dir: join(dir, 'inproc') });
  const store = createObjectStore({ backendFor: () => backend, prefix: '/registry', watchCache: { enabled: true, defaultSize: 100, sizes: {} } });
  try {
    const put = (resource: string, namespace: string, o: KubeObject): Promise<unknown> =>
      store.create({ group: G, resource, namespace, name: o.metadata?.name ?? '' }, o);
    await put('clusterroles', '', { apiVersion: `${G}/v1`, kind: 'ClusterRole', metadata: { name: 'bench-configmaps' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'create'] }] });
    for (let i = 0; i < BINDINGS; i++) await put('rolebindings', 'bench', binding(`user-${i}`, 'bench-other', [{ kind: 'User', apiGroup: G, name: `user-${i}` }]));
    await put('rolebindings', 'bench', binding('bench-user', 'bench-configmaps', [{ kind: 'User', apiGroup: G, name: 'bench-user' }]));
    const index = rbacIndexFor(store);
    await index.ready;
    const chain = new UnionAuthorizer([new PrivilegedGroupsAuthorizer(), new RbacAuthorizer(index)]);
    const attrs: AuthorizationAttributes = {
      user: { name: 'bench-user', groups: ['bench-group', 'system:authenticated'] }, verb: 'get', isResourceRequest: true, path: '',
      namespace: 'bench', apiGroup: '', apiVersion: 'v1', resource: 'configmaps', subresource: '', name: 'x',
    };
    const denied = { ...attrs, verb: 'delete' };
    const time = (a: AuthorizationAttributes, want: string): number => {
      const n = 200_000;
      let best = Number.POSITIVE_INFINITY;
      for (let round = 0; round < 5; round++) {
        const t0 = performance.now();
        for (let i = 0; i < n; i++) if ((chain.authorize(a) as { decision: string }).decision !== want) throw new Error('unexpected decision');
        best = Math.min(best, (performance.now() - t0) * 1000 / n);
      }
      return best;
    };
    return `in-process chain [system:masters, RBAC] with ${BINDINGS + 1} RoleBindings in the namespace: allowed ${time(attrs, 'allow').toFixed(2)} µs, no opinion ${time(denied, 'noOpinion').toFixed(2)} µs per decision (best of 5 × 200 000)`;
  } finally {
    await store.close();
    await backend.close();
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-rbacbench-'));
  const pinned = process.env['RBACBENCH_PIN'] !== '0' && canPin(availableParallelism());
  if (pinned) pinSelf(1);
  const servers: Server[] = [];
  try {
    const ca = await createCA({ commonName: 'corectl-bench-ca' });
    const serving = await issueCert({ ca, commonName: 'apiserver', dnsNames: ['localhost'], ips: ['127.0.0.1'], usages: 'server' });
    const admin = await issueCert({ ca, commonName: 'admin', organizations: ['system:masters'], usages: 'client' });
    const benchUser = await issueCert({ ca, commonName: 'bench-user', organizations: ['bench-group'], usages: 'client' });
    const pki: BenchPki = { caFile: join(dir, 'ca.crt'), certFile: join(dir, 'serving.crt'), keyFile: join(dir, 'serving.key'), client: { ca: ca.certPem, cert: admin.certPem, key: admin.keyPem } };
    await Promise.all([writePemFile(pki.caFile, ca.certPem), writePemFile(pki.certFile, serving.certPem), writePemFile(pki.keyFile, serving.keyPem)]);
    const user: TlsClient = { ca: ca.certPem, cert: benchUser.certPem, key: benchUser.keyPem };
    const cpu = pinned ? 0 : undefined;
    servers.push(await start('AlwaysAllow', 'AlwaysAllow', dir, pki, user, cpu));
    servers.push(await start('RBAC', RBAC_MODES, dir, pki, user, cpu));
    for (const s of servers) {
      await populate(s);
      await post(s.admin[0]!, '/api/v1/namespaces/bench/configmaps', JSON.parse(configMapBody('probe', 'bench', {})));
      await waitAllowed(s);
    }
    process.stderr.write(`${BINDINGS + 51} RoleBindings in namespace bench on each server; ${RBAC_MODES} vs AlwaysAllow, ${ROUNDS} interleaved rounds of ${ROW_MS} ms per server and row\n`);

    // Objects to GET (made by the bench user, so create is warmed up too).
    const names: string[] = [];
    for (const s of servers) {
      const r = await runLoad({
        sessions: s.user, concurrency: 50, durationMs: 60_000, maxOps: 1000,
        request: (i) => ({ path: '/api/v1/namespaces/bench/configmaps', method: 'POST', headers: JSON_CT, body: configMapBody(`get-${i}`, 'bench', { i: String(i) }) }),
      });
      if (r.errors) throw new Error(`${s.label}: ${r.errors} create errors: ${r.firstError ?? ''}`);
    }
    for (let i = 0; i < 1000; i++) names.push(`get-${i}`);

    const slice = ROW_MS / ROUNDS;
    const get = (s: Server) => () => measured(s, () => runLoad({
      sessions: s.user, concurrency: 50, durationMs: slice,
      request: (i) => ({ path: `/api/v1/namespaces/bench/configmaps/${names[i % names.length]!}`, headers: JSON_CT }),
    }));
    const seq = new Map<string, number>();
    const create = (s: Server) => () => measured(s, () => {
      const base = seq.get(s.label) ?? 0;
      let last = base;
      return runLoad({
        sessions: s.user, concurrency: 50, durationMs: slice,
        request: (i) => { last = Math.max(last, base + i + 1); return { path: '/api/v1/namespaces/bench/configmaps', method: 'POST', headers: JSON_CT, body: configMapBody(`cm-${base + i}`, 'bench', { i: String(i) }) }; },
      }).finally(() => seq.set(s.label, last));
    });
    const out: string[] = [];
    for (const [what, fn] of [['GET configmap x50', get], ['create configmap x50', create]] as const) {
      const [base, rbac] = await interleave(ROUNDS, [fn(servers[0]!), fn(servers[1]!)], mergeMeasured);
      const l = line(what, base!, rbac!);
      out.push(l);
      process.stderr.write(`${l}\n`);
    }
    const micro = await inProcess(dir);
    out.push(micro);
    process.stderr.write(`${micro}\n`);
    process.stdout.write(`\n${out.join('\n')}\n`);
  } finally {
    for (const s of servers) { closeSessions([...s.admin, ...s.user]); await s.child.stop(); }
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
