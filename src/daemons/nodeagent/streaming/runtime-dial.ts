/**
 * Connects to a runtime's streaming URL (what CRI Exec/Attach/PortForward return) with a SPDY
 * upgrade. The runtime serves SPDY and WebSocket v4; SPDY is used because only it can half-close
 * stdin (so `echo x | kubectl exec -i ... cat` ends) — see research wire-and-runtime §2.4.
 */
import { SpdySession } from '../../../util/spdy/session.js';
import { requestUpgrade, UpgradeError, type UpgradeOutcome } from '../../../util/upgrade-proxy.js';
import type { Logger } from 'pino';

export const REMOTE_COMMAND_PROTOCOLS = ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'];
export const PORT_FORWARD_PROTOCOL = 'portforward.k8s.io';

export class StreamDialError extends Error {
  constructor(message: string, readonly code: number) { super(message); }
}

/** Sends the SPDY upgrade; resolves with the switched connection or a StreamDialError. */
export async function upgradeToRuntime(url: string, protocols: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<Extract<UpgradeOutcome, { kind: 'upgraded' }>> {
  let out: UpgradeOutcome;
  try {
    out = await requestUpgrade({
      url, method: 'POST', timeoutMs, ...(signal ? { signal } : {}),
      headers: { connection: 'Upgrade', upgrade: 'SPDY/3.1', 'x-stream-protocol-version': [...protocols], 'content-length': '0' },
    });
  } catch (e) {
    throw new StreamDialError(`error dialing the runtime's streaming server: ${(e as Error).message}`, e instanceof UpgradeError && e.timeout ? 504 : 500);
  }
  if (out.kind === 'response') {
    const chunks: Buffer[] = [];
    for await (const c of out.res) chunks.push(c as Buffer);
    throw new StreamDialError(`the runtime's streaming server answered ${out.res.statusCode}: ${Buffer.concat(chunks).toString('utf8').trim()}`, 500);
  }
  return out;
}

export interface RuntimeSpdy {
  readonly session: SpdySession;
  /** The sub-protocol the runtime chose (X-Stream-Protocol-Version). */
  readonly protocol: string;
}

export async function dialRuntimeSpdy(url: string, protocols: readonly string[], timeoutMs: number, log: Logger, signal?: AbortSignal): Promise<RuntimeSpdy> {
  const up = await upgradeToRuntime(url, protocols, timeoutMs, signal);
  const protocol = String(up.res.headers['x-stream-protocol-version'] ?? '');
  if (up.head.length > 0) up.socket.unshift(up.head);
  const session = new SpdySession(up.socket, { client: true, log });
  return { session, protocol };
}
