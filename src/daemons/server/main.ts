/**
 * `corectl server`: a whole one-node cluster in one process (beyond the reference).
 *
 * Start: plan (every option checked by its daemon's parser; a problem is one line, exit 2) →
 * data dir and PKI (created on first start, reused after) → coreconfig files → the API server,
 * waited for until /readyz answers → the controller manager, scheduler and node agent, side by
 * side, each with its own stop signal → the node's Ready condition, watched in the background.
 * Progress goes to stdout as short `corectl: ...` lines; logs go to the logger (stderr).
 *
 * The daemons talk to the API server over loopback TLS with the generated certificates (see
 * admin-coreconfig.ts). The API server is essential: if it cannot start or ends, everything
 * stops and the exit code is 1. Any other part that is missing or ends is reported in one line
 * and the rest keep running. Stop (the signal): node agent, scheduler, controller manager, then
 * the API server, each given STOP_GRACE_MS.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { DaemonContext } from '../../cli.js';
import { loadCoreconfig, type ClientConnection } from '../../client/coreconfig.js';
import { FlagError } from '../../flags/flag-error.js';
import { SERVER_PARTS, type ServerConfig, type ServerPart } from '../../flags/server.js';
import { writeServerCoreconfigs } from './admin-coreconfig.js';
import { startServerClusterDns, type RunningClusterDns } from './cluster-dns-setup.js';
import { ensureNodeagentClientBinding } from './nodeagent-client-rbac.js';
import { keepJoinInfo } from './join-setup.js';
import { ensureLocalStorageClass } from './local-storage-setup.js';
import { RestClient } from '../../client/rest-client.js';
import { loadPart, startPart, type RunningPart } from './part-runner.js';
import { APISERVER_LEAVES, bootstrapPki } from './pki-bootstrap.js';
import { ensureFrontProxyPki } from './front-proxy-pki.js';
import { startServerMetrics, type ServerMetrics } from './metrics-server-setup.js';
import { planServer, type ServerPlan } from './plan.js';
import { waitForNodeReady, waitForReadyz } from './readiness.js';

export interface ServerRunContext extends DaemonContext {
  /** Where progress lines go. @default stdout */
  out?: (line: string) => void;
  /** performance.now() at start, for the times in progress lines. @default 0 (process start) */
  startedAt?: number;
  /** Main module of a part, replaceable for tests. */
  partModules?: Partial<Record<ServerPart, URL>>;
}

const APISERVER_READY_DEADLINE_MS = 60_000;
const NODE_READY_DEADLINE_MS = 120_000;
const STOP_GRACE_MS = 15_000;

function waitForAbort(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

function runtimeText(plan: ServerPlan): string {
  const c = plan.nodeagent.config;
  if (c.containerRuntime === 'fake') {
    return plan.runtimeDefaulted
      ? 'the fake runtime (simulated containers: no --container-runtime-endpoint was given)'
      : 'the fake runtime (simulated containers)';
  }
  return `the CRI runtime at ${c.containerRuntimeEndpoint}`;
}

function configOf(plan: ServerPlan, part: ServerPart): unknown {
  switch (part) {
    case 'apiserver': return plan.apiserver.config;
    case 'controller-manager': return plan.controllerManager.config;
    case 'scheduler': return plan.scheduler.config;
    case 'nodeagent': return plan.nodeagent.config;
    case 'proxy': return plan.proxy.config;
  }
}

/** The pid in the file when that process is alive and looks like a corectl server. */
async function livePid(path: string): Promise<number | undefined> {
  const pid = Number((await readFile(path, 'utf8').catch(() => '')).trim());
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  try { process.kill(pid, 0); } catch { return undefined; }
  const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
  return argv.includes('server') ? pid : undefined;
}

async function writePidFile(path: string): Promise<void> {
  await writeFile(path, `${process.pid}\n`, { mode: 0o644 });
}

async function removePidFile(path: string): Promise<void> {
  const text = await readFile(path, 'utf8').catch(() => '');
  if (text.trim() === String(process.pid)) await rm(path, { force: true });
}

export async function run(config: ServerConfig, ctx: ServerRunContext): Promise<number> {
  const log: Logger = ctx.log.child({ component: 'server' });
  const out = ctx.out ?? ((line: string) => { process.stdout.write(`${line}\n`); });
  const say = (line: string): void => out(`corectl: ${line}`);
  const t0 = ctx.startedAt ?? 0;
  const at = (): string => `${((performance.now() - t0) / 1000).toFixed(1)}s`;

  let plan: ServerPlan;
  try {
    plan = await planServer(config);
  } catch (e) {
    if (e instanceof FlagError) {
      process.stderr.write(`server: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  for (const part of [plan.apiserver, plan.controllerManager, plan.scheduler, plan.nodeagent, plan.proxy]) {
    for (const w of part.warnings) process.stderr.write(`server: ${w}\n`);
  }

  const { layout } = plan;
  try {
    await mkdir(layout.dataDir, { recursive: true, mode: 0o700 });
    await mkdir(layout.logsDir, { recursive: true, mode: 0o700 });
  } catch (e) {
    process.stderr.write(`server: --data-dir: cannot create ${layout.dataDir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}\n`);
    return 1;
  }
  const pidFile = join(layout.dataDir, 'server.pid');
  const other = await livePid(pidFile);
  if (other !== undefined) {
    process.stderr.write(`server: --data-dir: ${layout.dataDir} is in use by another corectl server (pid ${other})\n`);
    return 1;
  }
  await writePidFile(pidFile);
  try {
    return await runCluster(plan, ctx, { log, say, at });
  } finally {
    await removePidFile(pidFile);
  }
}

/**
 * Approves the serving certificate requests of nodes for their own names and addresses until
 * the server stops (serving-csr-approver.ts says why this is the server's job, not a controller's).
 */
async function approveServingCsrs(admin: ClientConnection, signal: AbortSignal, log: Logger): Promise<void> {
  const [{ RestClient }, { ServingCsrApprover }] = await Promise.all([import('../../client/rest-client.js'), import('./serving-csr-approver.js')]);
  const client = new RestClient({ connection: admin, contentType: 'application/json', qps: 0, userAgent: 'corectl-server/serving-csr-approver' });
  try {
    await new ServingCsrApprover(client, log.child({ component: 'serving-csr-approver' })).run(signal);
  } finally {
    client.close();
  }
}

interface Io {
  log: Logger;
  say: (line: string) => void;
  at: () => string;
}

async function runCluster(plan: ServerPlan, ctx: ServerRunContext, io: Io): Promise<number> {
  const { log, say, at } = io;
  say(`data dir ${plan.layout.dataDir}`);
  // The API server's module loads while keys are generated (on the thread pool); the others
  // once the API server runs, so that they do not delay it.
  const loading = new Map<ServerPart, ReturnType<typeof loadPart>>([['apiserver', loadPart('apiserver', ctx.partModules?.apiserver)]]);
  const preloadOthers = (): void => {
    for (const p of plan.enabled) if (!loading.has(p)) loading.set(p, loadPart(p, ctx.partModules?.[p]));
  };
  // On a first start the leaves only the other parts need are issued after the API server is
  // ready (certificate generation is most of a first start's extra time).
  const pki = await bootstrapPki({ dir: plan.layout.pkiDir, ...plan.certificates, only: APISERVER_LEAVES });
  const frontProxy = await ensureFrontProxyPki(plan.layout.pkiDir);
  if (frontProxy.length && !pki.caCreated) say(`front-proxy PKI written: ${frontProxy.join(', ')}`);
  const shortFp = pki.caFingerprint.slice(0, 23);
  if (pki.caCreated) say(`PKI created in ${plan.layout.pkiDir} (CA SHA-256 ${shortFp}..., ${at()})`);
  else if (pki.written.length) say(`PKI reused from ${plan.layout.pkiDir}, renewed: ${pki.written.join(', ')} (CA SHA-256 ${shortFp}..., ${at()})`);
  else say(`PKI reused from ${plan.layout.pkiDir} (CA SHA-256 ${shortFp}..., ${at()})`);
  const coreconfigs = await writeServerCoreconfigs({ dataDir: plan.layout.dataDir, server: plan.apiserverUrl, pki: pki.paths, nodeName: plan.nodeName });
  const admin: ClientConnection = await loadCoreconfig({ path: coreconfigs.admin });

  const running: RunningPart[] = [];
  const stopping = new AbortController();
  let clusterDns: RunningClusterDns | undefined;
  let metrics: ServerMetrics | undefined;
  const stopAll = async (): Promise<void> => {
    stopping.abort();
    await metrics?.stop();
    await clusterDns?.stop();
    const order = (p: RunningPart): number => SERVER_PARTS.indexOf(p.name);
    for (const part of [...running].sort((a, b) => order(b) - order(a))) {
      if (part.ended) continue;
      const result = await part.stop(STOP_GRACE_MS);
      if (result === 'timeout') say(`${part.name} did not stop within ${STOP_GRACE_MS / 1000}s; going on`);
      else say(`${part.name} stopped`);
    }
  };
  const start = async (part: ServerPart): Promise<RunningPart | undefined> => {
    const runFn = await (loading.get(part) ?? loadPart(part, ctx.partModules?.[part]));
    if (typeof runFn === 'string') {
      say(`${part} ${runFn}${part === 'apiserver' ? '' : '; running without it'}`);
      return undefined;
    }
    const p = startPart(part, runFn, configOf(plan, part), ctx.log.child({ part }));
    running.push(p);
    void p.done.then((exit) => {
      if (stopping.signal.aborted) return;
      const how = exit.error ? `failed: ${exit.error}` : `stopped unexpectedly (exit code ${exit.code})`;
      say(`${part} ${how}${part === 'apiserver' ? '' : '; the others keep running'}`);
    });
    return p;
  };

  // The API server first: everything else needs it.
  const servers = plan.apiserver.config.kvstoreServers;
  say(`starting apiserver on ${plan.apiserverUrl} (${servers.length ? `store at ${servers.join(',')}` : `embedded store in ${plan.apiserver.config.dataDir}`})`);
  const apiserver = await start('apiserver');
  if (!apiserver) return 1;
  const apiserverEnded = new AbortController();
  void apiserver.done.then(() => apiserverEnded.abort());
  const ready = await waitForReadyz(admin, {
    signal: AbortSignal.any([ctx.signal, apiserverEnded.signal]), deadlineMs: APISERVER_READY_DEADLINE_MS,
    // A refused loopback connection costs nothing: poll often so the ready line is prompt.
    firstDelayMs: 10, maxDelayMs: 40,
  });
  if (ready !== 'ready') {
    if (ready === 'timeout') say(`apiserver did not become ready within ${APISERVER_READY_DEADLINE_MS / 1000}s; stopping`);
    await stopAll();
    return ctx.signal.aborted ? 0 : 1;
  }
  say(`apiserver ready on ${plan.apiserverUrl} (${at()})`);
  // Before the node agent runs: the API server's calls to it are authorized by RBAC.
  await ensureNodeagentClientBinding(admin, log);
  // cluster-info and the RBAC of joining nodes (`corectl token create --print-join-command`).
  const joinClient = new RestClient({ connection: admin, contentType: 'application/json', qps: 0 });
  const joinInfo = keepJoinInfo(joinClient, { server: plan.advertisedUrl, caPem: await readFile(plan.pki.caCert, 'utf8') },
    log.child({ component: 'join-info' }), stopping.signal);
  if (plan.localStorage) {
    await ensureLocalStorageClass(joinClient, { dataDir: resolve(plan.layout.dataDir), helperImage: plan.localStorage.helperImage, log: log.child({ component: 'local-storage' }) })
      .then((made) => { if (made) say(`default StorageClass local-path: volumes in ${join(resolve(plan.layout.dataDir), 'storage')} on the pod's node`); })
      .catch((e: Error) => say(`default StorageClass local-path not created: ${e.message}`));
  }
  const rest = await bootstrapPki({ dir: plan.layout.pkiDir, ...plan.certificates });
  if (rest.written.length) say(`PKI for the other parts written: ${rest.written.join(', ')} (${at()})`);
  // Loading the other parts' modules only now keeps the main thread free for the API server's
  // own start (the aim that is tight); the node still becomes Ready well within its aim.
  preloadOthers();

  if (plan.clusterDns) {
    const d = plan.clusterDns;
    try {
      clusterDns = await startServerClusterDns(d, { connection: admin, nodeName: plan.nodeName, log: ctx.log.child({ part: 'cluster-dns' }) });
      const via = d.agentClusterDns.length ? `; pods' resolv.conf names ${d.agentClusterDns.join(',')}` : '';
      say(`cluster DNS on ${d.nodeIp}:${d.port} for ${d.domain} (kube-dns Service ${d.serviceIp ?? 'without an IP'})${via} (${at()})`);
    } catch (e) {
      say(`cluster DNS not started: ${d.nodeIp}:${d.port}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}; pods get the host's resolvers (--disable-cluster-dns or --cluster-dns-port)`);
      // No pod is to name a resolver that does not answer.
      if (d.agentClusterDns.length) plan = { ...plan, nodeagent: { ...plan.nodeagent, config: { ...plan.nodeagent.config, clusterDns: [] } } };
    }
  }

  const others = plan.enabled.filter((p) => p !== 'apiserver');
  for (const part of ['controller-manager', 'scheduler', 'nodeagent'] as const) {
    if (!others.includes(part)) say(`${part} disabled (--disable-${part === 'nodeagent' ? 'agent' : part})`);
  }
  if (plan.proxyOff) say(`proxy off: ${plan.proxyOff}`);
  const agentStartedAt = Date.now();
  const started = await Promise.all(others.map(async (part) => ({ part, running: await start(part) })));
  for (const { part, running: p } of started) {
    if (!p) continue;
    if (part === 'nodeagent') say(`nodeagent started for node ${plan.nodeName} with ${runtimeText(plan)} (${at()})`);
    else say(`${part} started (${at()})`);
  }
  if (plan.metricsServer) {
    try {
      metrics = await startServerMetrics({ connection: admin, advertiseAddress: new URL(plan.advertisedUrl).hostname.replace(/^\[|\]$/g, ''), log: ctx.log.child({ part: 'metrics-server' }) });
      say(`metrics-server started on port ${metrics.port} (${at()})`);
    } catch (e) {
      say(`metrics-server not started: ${(e as Error).message}; kubectl top and the autoscaler have no metrics (--disable-metrics-server)`);
    }
  } else say('metrics-server disabled (--disable-metrics-server)');
  say(`cluster admin credentials: export KUBECONFIG=${coreconfigs.admin}`);
  const approval = approveServingCsrs(admin, stopping.signal, log);

  const agent = started.find((s) => s.part === 'nodeagent')?.running;
  let nodeWatch: Promise<void> = Promise.resolve();
  if (agent) {
    const agentEnded = new AbortController();
    void agent.done.then(() => agentEnded.abort());
    nodeWatch = waitForNodeReady(admin, plan.nodeName, agentStartedAt, {
      signal: AbortSignal.any([stopping.signal, ctx.signal, agentEnded.signal]), deadlineMs: NODE_READY_DEADLINE_MS,
    }).then((outcome) => {
      if (outcome === 'ready') say(`node ${plan.nodeName} Ready (${at()})`);
      else if (outcome === 'timeout') say(`node ${plan.nodeName} not Ready after ${NODE_READY_DEADLINE_MS / 1000}s; see the nodeagent log lines`);
    });
  }

  await Promise.race([waitForAbort(ctx.signal), apiserver.done]);
  const crashed = !ctx.signal.aborted;
  say(crashed ? 'apiserver ended: stopping the other daemons' : 'stopping');
  await stopAll();
  await nodeWatch;
  await approval;
  await joinInfo;
  joinClient.close();
  const exit = await apiserver.done;
  log.info({ exitCode: exit.code }, 'server stopped');
  say('stopped');
  return crashed ? 1 : 0;
}
