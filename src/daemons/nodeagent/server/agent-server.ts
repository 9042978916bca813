/**
 * The node agent's HTTP endpoints, by listener:
 *   secure (--port, HTTPS, authenticated): /healthz, /pods, /containerLogs/..., /stats/summary,
 *     /metrics, /manifests (the manifest-submission API, see MANIFEST-API.md), and 501 for the
 *     streaming endpoints (exec, attach, portForward, run) that are not built yet;
 *   read-only (--read-only-port, HTTP, no authentication): /healthz, /pods, /stats/summary, /metrics;
 *   health (--healthz-port): /healthz.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { freemem, totalmem } from 'node:os';
import type { Logger } from 'pino';
import type { UserInfo } from '../../../auth/user.js';
import type { PodManager } from '../pod-manager.js';
import type { PodSet } from '../pod-set.js';
import type { RuntimeBackend } from '../runtime/runtime.js';
import { ManifestError, parseManifestText, staticPodFrom } from '../sources/static-pod.js';
import { serveContainerLogs } from './logs-handler.js';
import { readRequestBody, sendJson, sendStatus } from './respond.js';

export type ListenerKind = 'secure' | 'readonly' | 'healthz';

export interface AgentServerContext {
  readonly nodeName: string;
  readonly pods: PodManager;
  readonly podSet: PodSet;
  readonly runtime: RuntimeBackend;
  readonly startTime: number;
  readonly enableDebuggingHandlers: boolean;
  readonly anonymousAuth: boolean;
  readonly healthy: () => boolean;
  readonly log: Logger;
}

const STREAMING = new Set(['exec', 'attach', 'portForward', 'run', 'cri']);

/** Who sent the request on the secure port; undefined when it must be refused (401). */
export function authenticate(req: IncomingMessage, anonymousAuth: boolean): UserInfo | undefined | 'bad' {
  const sock = req.socket as TLSSocket;
  const cert = typeof sock.getPeerCertificate === 'function' ? sock.getPeerCertificate() : undefined;
  if (cert && Object.keys(cert).length > 0 && cert.raw) {
    if (!sock.authorized) return 'bad';
    const cn = Array.isArray(cert.subject?.CN) ? cert.subject.CN[0] : cert.subject?.CN;
    const o = cert.subject?.O;
    return { name: cn ?? '', groups: [...(Array.isArray(o) ? o : o ? [o] : []), 'system:authenticated'] };
  }
  if (req.headers.authorization) return 'bad'; // bearer tokens need --authentication-token-webhook (not built yet)
  return anonymousAuth ? { name: 'system:anonymous', groups: ['system:unauthenticated'] } : undefined;
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

function statsSummary(ctx: AgentServerContext): unknown {
  const now = new Date().toISOString();
  const total = totalmem();
  const free = freemem();
  return {
    node: {
      nodeName: ctx.nodeName, startTime: new Date(ctx.startTime).toISOString(),
      memory: { time: now, availableBytes: free, usageBytes: total - free, workingSetBytes: total - free },
      systemContainers: [],
    },
    pods: ctx.pods.pods().map((p) => ({
      podRef: { name: p.metadata?.name, namespace: p.metadata?.namespace, uid: p.metadata?.uid },
      startTime: p.status?.startTime,
      containers: (p.status?.containerStatuses ?? []).map((c) => ({ name: c.name, startTime: c.state.running?.startedAt ?? p.status?.startTime })),
    })),
  };
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
        const user = authenticate(req, ctx.anonymousAuth);
        if (user === undefined || user === 'bad') { sendStatus(res, 401, 'Unauthorized', 'Unauthorized'); return; }
      }
      const readOnly = kind === 'readonly';
      if (head === 'pods' && parts.length === 1) { sendJson(res, 200, { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: ctx.pods.pods() }); return; }
      if (head === 'stats' && parts[1] === 'summary') { sendJson(res, 200, statsSummary(ctx)); return; }
      if (head === 'metrics' && parts.length === 1) {
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
        res.end(metricsText(ctx));
        return;
      }
      if (!readOnly && head === 'manifests') { await manifests(req, res, parts.slice(1), ctx); return; }
      if (!readOnly && ctx.enableDebuggingHandlers && head === 'containerLogs') {
        await serveContainerLogs(req, res, parts.slice(1), url.searchParams, ctx.pods, ctx.runtime);
        return;
      }
      if (!readOnly && ctx.enableDebuggingHandlers && STREAMING.has(head)) {
        sendStatus(res, 501, 'NotImplemented', `/${head} is not implemented yet: the node agent does not proxy CRI streaming (exec, attach, port-forward) yet`);
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
