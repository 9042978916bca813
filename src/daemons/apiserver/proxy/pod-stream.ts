/**
 * pods/exec, pods/attach and pods/portforward: the caller's HTTP/1.1 upgrade (WebSocket or
 * SPDY/3.1) is checked here (pod, phase, container, stream options), re-issued to the node
 * agent of the pod's node (/exec/NS/POD/CONTAINER?command=..&input=1&output=1&error=1&tty=1,
 * /attach/..., /portForward/NS/POD?port=N) with the API server's own client certificate, and
 * once the agent switches protocols the two connections are spliced; the protocol itself is
 * the agent's business.
 *
 * No privilege escalation (CVE-2018-1002105): only the upgrade and WebSocket/stream-protocol
 * headers are forwarded (never Authorization, impersonation or cookies), and an agent answer
 * other than 101 is relayed and BOTH connections are closed, so the caller can never send a
 * second request over the API server's authenticated connection to the agent.
 */
import type { Duplex } from 'node:stream';
import { ApiError, errors, isApiError } from '../../../api/meta/status.js';
import { findResource } from '../../../api/resources/registry.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { ApiRequest, RequestContext } from '../context.js';
import { writeStatusToSocket } from '../filters/write-status.js';
import { queryBool } from '../request-info.js';
import type { SubresourceHandler, SubresourceTarget, SubresourceUpgradeHandler } from '../rest/rest-api.js';
import { headerPairs, relayResponse, splice, writeResponseHead } from '../../../util/upgrade-proxy.js';
import { nodeTarget, type NodeConnection } from './node-connection.js';

export type PodStreamKind = 'exec' | 'attach' | 'portforward';

/** Request headers the agent needs to complete the upgrade; nothing else is forwarded. */
const FORWARDED = ['upgrade', 'sec-websocket-key', 'sec-websocket-version', 'sec-websocket-protocol', 'x-stream-protocol-version'];

interface PodShape {
  spec?: { nodeName?: string; containers?: Array<{ name: string }>; initContainers?: Array<{ name: string }>; ephemeralContainers?: Array<{ name: string }> };
  status?: { phase?: string };
}

/** The container the request names, or the pod's only one; Kubernetes' wording on failure. */
export function chooseContainer(pod: KubeObject, name: string, requested: string): string {
  const spec = (pod as PodShape).spec ?? {};
  const all = [...(spec.containers ?? []), ...(spec.initContainers ?? []), ...(spec.ephemeralContainers ?? [])].map((c) => c.name);
  if (!requested) {
    const main = (spec.containers ?? []).map((c) => c.name);
    if (main.length === 1) return main[0]!;
    throw errors.badRequest(`a container name must be specified for pod ${name}, choose one of: [${main.join(' ')}]`);
  }
  if (!all.includes(requested)) throw errors.badRequest(`container ${requested} is not valid for pod ${name}`);
  return requested;
}

interface StreamOptions {
  kind: string;
  apiVersion: 'v1';
  stdin?: boolean;
  stdout?: boolean;
  stderr?: boolean;
  tty?: boolean;
  container?: string;
  command?: string[];
  ports?: number[];
}

/**
 * The request's connect options as Kubernetes decodes them from the query (PodExecOptions,
 * PodAttachOptions, PodPortForwardOptions; false and empty fields left out): what CONNECT
 * admission is shown and, after it (a mutating webhook may change them), what the node agent is
 * asked for. A port that is no port is a 400 here, before admission, as in Kubernetes.
 */
export function streamOptions(kind: PodStreamKind, q: URLSearchParams): StreamOptions {
  if (kind === 'portforward') {
    const ports: number[] = [];
    for (const raw of q.getAll('ports').flatMap((p) => p.split(','))) {
      const port = Number(raw.trim());
      if (!Number.isInteger(port) || port < 1 || port > 65535) throw errors.badRequest(`invalid port "${raw}": must be between 1 and 65535`);
      ports.push(port);
    }
    return { kind: 'PodPortForwardOptions', apiVersion: 'v1', ...(ports.length ? { ports } : {}) };
  }
  const o: StreamOptions = { kind: kind === 'exec' ? 'PodExecOptions' : 'PodAttachOptions', apiVersion: 'v1' };
  for (const f of ['stdin', 'stdout', 'stderr', 'tty'] as const) if (queryBool(q.get(f)) === true) o[f] = true;
  const container = q.get('container');
  if (container) o.container = container;
  if (kind === 'exec') {
    const cmd = q.getAll('command');
    if (cmd.length) o.command = cmd;
  }
  return o;
}

/** The node agent path and query for the request's options, after Kubernetes' checks. */
export function agentPath(kind: PodStreamKind, pod: KubeObject, opts: StreamOptions): string {
  const ns = pod.metadata?.namespace ?? '';
  const name = pod.metadata?.name ?? '';
  const phase = (pod as PodShape).status?.phase;
  const enc = encodeURIComponent;
  if (kind === 'portforward') {
    const params = new URLSearchParams();
    for (const port of Array.isArray(opts.ports) ? opts.ports : []) {
      if (!Number.isInteger(port) || port < 1 || port > 65535) throw errors.badRequest(`invalid port "${String(port)}": must be between 1 and 65535`);
      params.append('port', String(port));
    }
    const qs = params.toString();
    return `/portForward/${enc(ns)}/${enc(name)}${qs ? `?${qs}` : ''}`;
  }
  if (phase === 'Succeeded' || phase === 'Failed') {
    throw errors.badRequest(kind === 'exec'
      ? `cannot exec into a container in a completed pod; current phase is ${phase}`
      : `cannot attach a container in a completed pod; current phase is ${phase}`);
  }
  const container = chooseContainer(pod, name, typeof opts.container === 'string' ? opts.container : '');
  const params = new URLSearchParams();
  const stdin = opts.stdin === true;
  const stdout = opts.stdout === true;
  const stderr = opts.stderr === true;
  const tty = opts.tty === true;
  if (!stdin && !stdout && !stderr) throw errors.badRequest('you must specify at least one of stdin, stdout, stderr');
  if (tty && stderr) {
    // kubectl never asks for both; Kubernetes rejects it as invalid options.
    throw new ApiError(422, 'Invalid', 'tty and stderr cannot both be true', {});
  }
  if (kind === 'exec') {
    const cmd = Array.isArray(opts.command) ? opts.command.filter((c): c is string => typeof c === 'string') : [];
    if (cmd.length === 0) throw errors.badRequest('you must specify at least one command for the container');
    for (const c of cmd) params.append('command', c);
  }
  if (stdin) params.set('input', '1');
  if (stdout) params.set('output', '1');
  if (stderr) params.set('error', '1');
  if (tty) params.set('tty', '1');
  return `/${kind}/${enc(ns)}/${enc(name)}/${enc(container)}?${params.toString()}`;
}

function upgradeHeaders(req: ApiRequest): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = { connection: 'Upgrade' };
  for (const h of FORWARDED) {
    const v = req.headers[h];
    if (v !== undefined) out[h] = v;
  }
  return out;
}

async function proxyUpgrade(conn: NodeConnection, kind: PodStreamKind, ctx: RequestContext, req: ApiRequest, socket: Duplex, head: Buffer, target: SubresourceTarget): Promise<void> {
  const options = streamOptions(kind, ctx.query);
  const pod = await target.registry.get(target.def, target.namespace, target.name);
  // CONNECT admission (DenyEscalatingExec, DenyExecOnPrivileged, the webhooks), as Kubernetes runs it before connecting.
  await target.registry.admission.connect({ def: target.def, subresource: kind, namespace: target.namespace, name: target.name, object: pod, options: options as unknown as KubeObject, request: { user: ctx.user, version: 'v1' } });
  const path = agentPath(kind, pod, options);
  const nodeName = (pod as PodShape).spec?.nodeName;
  if (!nodeName) throw errors.badRequest(`pod ${target.name} does not have a host assigned`);
  const nodeDef = findResource('', 'v1', 'nodes');
  if (!nodeDef) throw errors.internal('nodes are not served');
  const node = await target.registry.get(nodeDef, '', nodeName);
  const out = await conn.upgrade(nodeTarget(node, conn.options.preferredAddressTypes), String(req.method ?? 'GET'), path, upgradeHeaders(req), ctx.signal);
  if (out.kind === 'response') {
    ctx.log.debug({ code: out.res.statusCode, path }, 'node agent refused the upgrade');
    await relayResponse(socket, out.res);
    return;
  }
  writeResponseHead(socket, 101, 'Switching Protocols', headerPairs(out.res));
  await splice(socket, head, out.socket, out.head);
}

export function createPodStreamHandlers(conn: NodeConnection, kind: PodStreamKind): { handler: SubresourceHandler; upgrade: SubresourceUpgradeHandler } {
  return {
    // A plain request cannot carry a stream: Kubernetes answers it so too.
    handler: async () => { throw errors.badRequest('Upgrade request required'); },
    upgrade: (ctx, req, socket, head, target) => {
      proxyUpgrade(conn, kind, ctx, req, socket, head, target).catch((e: unknown) => {
        const err = isApiError(e) ? e : errors.internal(`${kind} failed`, e);
        if (err.code >= 500) ctx.log.warn({ err: err.message }, `pods/${kind} proxy failed`);
        writeStatusToSocket(socket, err);
      });
    },
  };
}
