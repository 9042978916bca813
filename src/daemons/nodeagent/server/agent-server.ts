/**
 * The node agent's HTTP endpoints, by listener:
 *   secure (--port, HTTPS, authenticated): /healthz, /pods, /containerLogs/..., /stats/summary,
 *     /metrics, /manifests (the manifest-submission API with --enable-manifest-api, see
 *     MANIFEST-API.md), and the streaming endpoints /exec, /attach, /portForward (HTTP/1.1
 *     upgrades) and /run (streaming-handler.ts); the manifest API and the streaming endpoints
 *     refuse anonymous callers;
 *   read-only (--read-only-port, HTTP, no authentication): /healthz, /pods, /stats/summary, /metrics;
 *   health (--healthz-port): /healthz.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { cpus, totalmem } from 'node:os';
import type { Logger } from 'pino';
import type { PodManager } from '../pod-manager.js';
import type { PodSet } from '../pod-set.js';
import type { RuntimeBackend } from '../runtime/runtime.js';
import { ManifestError, parseManifestText, staticPodFrom } from '../sources/static-pod.js';
import { checkAgentAccess, defaultAgentAccess, type AccessResult, type AgentAccess } from './agent-authz.js';
import { serveContainerLogs } from './logs-handler.js';
import { readRequestBody, sendJson, sendStatus } from './respond.js';
import { serveStreamingRequest, serveStreamingUpgrade, STREAMING_PATHS } from './streaming-handler.js';
import { writeResponseHead } from '../../../util/upgrade-proxy.js';
import { cadvisorMetricsText, resourceMetricsText } from '../stats/resource-metrics.js';
import type { StatsProvider } from '../stats/summary.js';

export type ListenerKind = 'secure' | 'readonly' | 'healthz';

export interface AgentServerContext {
  readonly nodeName: string;
  readonly pods: PodManager;
  readonly podSet: PodSet;
  readonly runtime: RuntimeBackend;
  readonly startTime: number;
  readonly enableDebuggingHandlers: boolean;
  /** --enable-manifest-api: /manifests is served (404 otherwise). */
  readonly manifestApi?: boolean;
  readonly anonymousAuth: boolean;
  /** Authentication and authorization of the secure port (agent-authn/agent-authz); default: certificates + anonymous per anonymousAuth, AlwaysAllow. */
  readonly access?: AgentAccess;
  readonly healthy: () => boolean;
  readonly log: Logger;
  /** Milliseconds for reaching the runtime's streaming server (default 30 s). */
  readonly streamDialTimeoutMs?: number;
  /** --streaming-connection-idle-timeout in milliseconds; 0 or unset: no limit. */
  readonly streamIdleTimeoutMs?: number;
  /** The Summary API and resource metrics (stats/summary.ts). */
  readonly stats: StatsProvider;
}

const defaultAccess = new WeakMap<AgentServerContext, AgentAccess>();

/**
 * Paths that change the node or run commands in its containers: the manifest API, /run, /exec,
 * /attach and /portForward. Their callers must be authenticated, whatever the authorization
 * mode: anonymous access with AlwaysAllow (the reference's defaults) would otherwise let anyone
 * who reaches the port start pods and run commands as root (issue 27).
 */
const IDENTIFIED_ONLY = new Set(['manifests', 'run', 'exec', 'attach', 'portForward']);

const isAnonymous = (user: { name: string; groups: readonly string[] }): boolean =>
  user.name === 'system:anonymous' || user.groups.includes('system:unauthenticated');

/** The secure port's gate: authentication, then authorization (401/403/500 when refused); upgrade routes call it too. */
export async function checkAccess(req: IncomingMessage, path: string, ctx: AgentServerContext): Promise<AccessResult> {
  let access = ctx.access ?? defaultAccess.get(ctx);
  if (!access) {
    access = defaultAgentAccess(ctx.anonymousAuth, ctx.nodeName);
    defaultAccess.set(ctx, access);
  }
  const result = await checkAgentAccess(req, path, access);
  const head = path.split('/').filter(Boolean)[0] ?? '';
  if (result.ok && IDENTIFIED_ONLY.has(head) && isAnonymous(result.user)) {
    return { ok: false, code: 401, reason: 'Unauthorized', message: 'Unauthorized' };
  }
  return result;
}

function metricsText(ctx: AgentServerContext): string {
  const pods = ctx.pods.pods();
  const running = pods.filter((p) => p.status?.phase === 'Running').length;
  const containers = pods.reduce((n, p) => n + (p.status?.containerStatuses ?? []).filter((c) => c.state.running).length, 0);
  return [
    '# HELP kubelet_running_pods Number of pods that have a running pod sandbox.',
    '# TYPE kubelet_running_pods gauge',
    `kubelet_running_pods ${running}`,
    '# HELP kubelet_running_containers Number of containers currently running.',
    '# TYPE kubelet_running_containers gauge',
    `kubelet_running_containers{container_state="running"} ${containers}`,
    '# HELP kubelet_node_name The node\'s name. The count is always 1.',
    '# TYPE kubelet_node_name gauge',
    `kubelet_node_name{node="${ctx.nodeName}"} 1`,
    '# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.',
    '# TYPE process_start_time_seconds gauge',
    `process_start_time_seconds ${Math.floor(ctx.startTime / 1000)}`,
    '',
  ].join('\n');
}

async function serveStatsMetrics(res: ServerResponse, which: 'resource' | 'cadvisor', stats: StatsProvider, log: Logger): Promise<void> {
  let text: string;
  try {
    const summary = await stats.summary();
    text = which === 'resource' ? resourceMetricsText(summary) : cadvisorMetricsText(summary, { cores: cpus().length, memoryBytes: totalmem() });
  } catch (e) {
    // As kubelet: the scrape answers, with its error gauge set.
    log.warn({ err: (e as Error).message }, 'stats for metrics failed');
    if (which !== 'resource') throw e;
    text = resourceMetricsText(undefined, true);
  }
  res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
  res.end(text);
}

async function manifests(req: IncomingMessage, res: ServerResponse, rest: string[], ctx: AgentServerContext): Promise<void> {
  const method = req.method ?? 'GET';
  if (method === 'GET' && rest.length === 0) {
    sendJson(res, 200, { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: ctx.podSet.list('server') });
    return;
  }
  if (method === 'POST' && rest.length === 0) {
    let pod;
    try {
      const body = (await readRequestBody(req)).toString('utf8');
      const docs = parseManifestText(body, 'request body');
      if (docs.length !== 1) throw new ManifestError(`request body: expected one Pod, got ${docs.length} objects`);
      pod = staticPodFrom(docs[0] as Record<string, unknown>, 'server', ctx.nodeName, 'request body');
    } catch (e) {
      sendStatus(res, 400, 'BadRequest', (e as Error).message);
      return;
    }
    for (const old of ctx.podSet.list('server')) {
      if (old.metadata?.namespace === pod.metadata?.namespace && old.metadata?.name === pod.metadata?.name && old.metadata?.uid !== pod.metadata?.uid) {
        ctx.podSet.remove('server', old.metadata?.uid ?? '');
      }
    }
    ctx.podSet.upsert('server', pod);
    sendJson(res, 201, pod);
    return;
  }
  if (method === 'DELETE' && rest.length === 2) {
    const [ns, name] = rest;
    const hit = ctx.podSet.list('server').find((p) => p.metadata?.namespace === ns && (p.metadata?.name === name || p.metadata?.name === `${name}-${ctx.nodeName}`));
    if (!hit) { sendStatus(res, 404, 'NotFound', `manifest pod "${name}" in namespace "${ns}" not found`); return; }
    ctx.podSet.remove('server', hit.metadata?.uid ?? '');
    sendStatus(res, 200, '', `pod "${hit.metadata?.name}" removed`);
    return;
  }
  sendStatus(res, 405, 'MethodNotAllowed', `${method} is not allowed here; use GET or POST /manifests, DELETE /manifests/<namespace>/<name>`);
}

export function agentHandler(kind: ListenerKind, ctx: AgentServerContext): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://node');
      const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
      const head = parts[0] ?? '';
      if (head === 'healthz') {
        const ok = ctx.healthy();
        res.writeHead(ok ? 200 : 500, { 'content-type': 'text/plain' });
        res.end(ok ? 'ok' : 'unhealthy');
        return;
      }
      if (kind === 'healthz') { sendStatus(res, 404, 'NotFound', 'only /healthz is served here'); return; }
      if (kind === 'secure') {
        const access = await checkAccess(req, url.pathname, ctx);
        if (!access.ok) { sendStatus(res, access.code, access.reason, access.message); return; }
      }
      const readOnly = kind === 'readonly';
      if (head === 'pods' && parts.length === 1) { sendJson(res, 200, { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: ctx.pods.pods() }); return; }
      if (head === 'stats' && parts[1] === 'summary' && parts.length === 2) { sendJson(res, 200, await ctx.stats.summary()); return; }
      if (head === 'metrics' && parts.length === 2 && (parts[1] === 'resource' || parts[1] === 'cadvisor')) {
        await serveStatsMetrics(res, parts[1], ctx.stats, ctx.log);
        return;
      }
      if (head === 'metrics' && parts.length === 1) {
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
        res.end(metricsText(ctx));
        return;
      }
      if (!readOnly && head === 'manifests') {
        if (ctx.manifestApi !== true) { sendStatus(res, 404, 'NotFound', 'the manifest API is off (--enable-manifest-api=false)'); return; }
        await manifests(req, res, parts.slice(1), ctx);
        return;
      }
      if (!readOnly && ctx.enableDebuggingHandlers && head === 'containerLogs') {
        await serveContainerLogs(req, res, parts.slice(1), url.searchParams, ctx.pods, ctx.runtime);
        return;
      }
      if (!readOnly && ctx.enableDebuggingHandlers && STREAMING_PATHS.has(head)) {
        await serveStreamingRequest(req, res, head, parts.slice(1), url.searchParams, streamingContext(ctx));
        return;
      }
      sendStatus(res, 404, 'NotFound', `the server could not find the requested resource (${url.pathname})`);
    })().catch((e: Error) => {
      ctx.log.error({ err: e.message, url: req.url }, 'handler failed');
      if (!res.headersSent) sendStatus(res, 500, 'InternalError', e.message);
      else res.destroy();
    });
  };
}

function streamingContext(ctx: AgentServerContext): Parameters<typeof serveStreamingUpgrade>[6] {
  return { pods: ctx.pods, runtime: ctx.runtime, log: ctx.log, dialTimeoutMs: ctx.streamDialTimeoutMs ?? 30_000, idleTimeoutMs: ctx.streamIdleTimeoutMs ?? 0 };
}

function refuseUpgrade(socket: Duplex, code: number, reason: string, message: string): void {
  const body = Buffer.from(JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code }));
  writeResponseHead(socket, code, reason, [['Content-Type', 'application/json'], ['Content-Length', String(body.length)], ['Connection', 'close']]);
  socket.end(body);
}

/** HTTP/1.1 upgrades on the secure port: the streaming endpoints, after the same authentication. */
export function agentUpgradeHandler(ctx: AgentServerContext): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  return (req, socket, head) => {
    socket.on('error', (e: Error) => ctx.log.debug({ err: e.message }, 'upgrade socket error'));
    const url = new URL(req.url ?? '/', 'http://node');
    const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    const head0 = parts[0] ?? '';
    void (async () => {
      const access = await checkAccess(req, url.pathname, ctx);
      if (!access.ok) { refuseUpgrade(socket, access.code, access.reason, access.message); return; }
      if (!ctx.enableDebuggingHandlers || !STREAMING_PATHS.has(head0)) {
        refuseUpgrade(socket, 404, 'NotFound', `the server could not find the requested resource (${url.pathname})`);
        return;
      }
      await serveStreamingUpgrade(req, socket, head, head0, parts.slice(1), url.searchParams, streamingContext(ctx));
    })().catch((e: Error) => {
      ctx.log.error({ err: e.message, url: req.url }, 'streaming upgrade failed');
      socket.destroy();
    });
  };
}
