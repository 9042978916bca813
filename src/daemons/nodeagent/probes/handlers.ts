/**
 * Runs one probe or lifecycle-hook action: exec (ExecSync in the container), httpGet (a GET
 * to the pod IP unless a host is given; 200-399 is success), tcpSocket (a connection
 * opens) or grpc (probes only: grpc.health.v1 Check to the pod IP, grpc-probe.ts). Named
 * ports resolve against the container's ports.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import type { RuntimeBackend } from '../runtime/runtime.js';
import type { Container, GrpcAction, HttpGetAction, LifecycleHandler, TcpSocketAction } from '../pod-types.js';
import { grpcProbe } from './grpc-probe.js';

export interface ActionResult { ok: boolean; output: string }

export interface ActionTarget {
  readonly runtime: RuntimeBackend;
  readonly containerId: string;
  readonly container: Container;
  readonly podIp: string;
}

function resolvePort(port: number | string, c: Container): number {
  if (typeof port === 'number') return port;
  if (/^\d+$/.test(port)) return Number(port);
  const p = (c.ports ?? []).find((x) => x.name === port);
  if (!p) throw new Error(`port ${JSON.stringify(port)} is not a named port of container ${c.name}`);
  return p.containerPort;
}

function httpGet(a: HttpGetAction, t: ActionTarget, timeoutMs: number): Promise<ActionResult> {
  return new Promise((resolve) => {
    let port: number;
    try { port = resolvePort(a.port, t.container); } catch (e) { resolve({ ok: false, output: (e as Error).message }); return; }
    const https = (a.scheme ?? 'HTTP').toUpperCase() === 'HTTPS';
    const headers: Record<string, string> = { 'user-agent': 'kube-probe/1.33', accept: '*/*' };
    for (const h of a.httpHeaders ?? []) headers[h.name.toLowerCase()] = h.value;
    const req = (https ? httpsRequest : httpRequest)({
      host: a.host || t.podIp || '127.0.0.1', port, path: a.path || '/', method: 'GET', headers, timeout: timeoutMs,
      ...(https ? { rejectUnauthorized: false } : {}),
    }, (res) => {
      const code = res.statusCode ?? 0;
      res.resume();
      resolve({ ok: code >= 200 && code < 400, output: `HTTP probe failed with statuscode: ${code}` });
    });
    req.on('timeout', () => req.destroy(new Error(`Get "${a.path ?? '/'}": context deadline exceeded`)));
    req.on('error', (e) => resolve({ ok: false, output: e.message }));
    req.end();
  });
}

function tcp(a: TcpSocketAction, t: ActionTarget, timeoutMs: number): Promise<ActionResult> {
  return new Promise((resolve) => {
    let port: number;
    try { port = resolvePort(a.port, t.container); } catch (e) { resolve({ ok: false, output: (e as Error).message }); return; }
    const host = a.host || t.podIp || '127.0.0.1';
    const s = connect({ host, port });
    const timer = setTimeout(() => { s.destroy(); resolve({ ok: false, output: `dial tcp ${host}:${port}: i/o timeout` }); }, timeoutMs);
    s.once('connect', () => { clearTimeout(timer); s.destroy(); resolve({ ok: true, output: '' }); });
    s.once('error', (e) => { clearTimeout(timer); resolve({ ok: false, output: e.message }); });
  });
}

/** Runs the action; never throws. */
export async function runAction(h: LifecycleHandler & { grpc?: GrpcAction }, t: ActionTarget, timeoutSeconds: number, signal?: AbortSignal): Promise<ActionResult> {
  try {
    if (h.exec) {
      const r = await t.runtime.execSync(t.containerId, h.exec.command ?? [], timeoutSeconds, signal ? { signal } : {});
      const output = Buffer.concat([r.stdout, r.stderr]).toString('utf8').slice(0, 4096);
      return { ok: r.exitCode === 0, output: r.exitCode === 0 ? output : `command ${JSON.stringify((h.exec.command ?? []).join(' '))} exited with ${r.exitCode}: ${output}` };
    }
    if (h.httpGet) return await httpGet(h.httpGet, t, timeoutSeconds * 1000);
    if (h.tcpSocket) return await tcp(h.tcpSocket, t, timeoutSeconds * 1000);
    if (h.grpc) return await grpcProbe(t.podIp || '127.0.0.1', h.grpc.port, h.grpc.service ?? '', timeoutSeconds * 1000);
    if (h.sleep) {
      await new Promise((r) => setTimeout(r, Math.max(0, h.sleep?.seconds ?? 0) * 1000));
      return { ok: true, output: '' };
    }
    return { ok: false, output: 'no action given' };
  } catch (e) {
    return { ok: false, output: (e as Error).message };
  }
}
