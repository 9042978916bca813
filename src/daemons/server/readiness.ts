/**
 * Start-up checks of the all-in-one server, made through the admin credentials like any client:
 * the API server's /readyz, and the Ready condition of this node. Both poll with growing
 * delays up to a deadline, and give up early when told to (a stop signal, or the daemon they
 * wait for having ended).
 */
import type { ClientConnection } from '../../client/coreconfig.js';
import { Http2Transport, readBody } from '../../client/transport.js';
import { abortableSleep } from '../../util/abort.js';

export type WaitOutcome = 'ready' | 'timeout' | 'aborted';

export interface WaitOptions {
  signal: AbortSignal;
  deadlineMs: number;
  /** First delay between polls (doubles up to maxDelayMs). @default 10 */
  firstDelayMs?: number;
  /** @default 250 */
  maxDelayMs?: number;
}


async function poll(check: (signal: AbortSignal) => Promise<boolean>, o: WaitOptions): Promise<WaitOutcome> {
  const end = Date.now() + o.deadlineMs;
  let delay = o.firstDelayMs ?? 10;
  const max = o.maxDelayMs ?? 250;
  while (!o.signal.aborted) {
    const attempt = AbortSignal.any([o.signal, AbortSignal.timeout(2000)]);
    try {
      if (await check(attempt)) return 'ready';
    } catch {
      // Not listening yet, or not answering yet: poll again.
    }
    if (o.signal.aborted) break;
    if (Date.now() >= end) return 'timeout';
    await abortableSleep(delay, o.signal);
    delay = Math.min(delay * 2, max);
  }
  return 'aborted';
}

/** Polls GET /readyz until it answers 200. */
export async function waitForReadyz(conn: ClientConnection, o: WaitOptions): Promise<WaitOutcome> {
  const transport = new Http2Transport(conn, { pingIntervalMs: 0 });
  try {
    return await poll(async (signal) => {
      const res = await transport.request({ method: 'GET', path: '/readyz', signal });
      await readBody(res.body);
      return res.status === 200;
    }, o);
  } finally {
    transport.close();
  }
}

interface NodeLike {
  status?: { conditions?: Array<{ type?: string; status?: string; lastHeartbeatTime?: string }> };
}

/**
 * Polls the node until its Ready condition is True with a heartbeat at or after `sinceMs`
 * (wall clock): after a restart the stored node still says Ready from the last run.
 */
export async function waitForNodeReady(conn: ClientConnection, nodeName: string, sinceMs: number, o: WaitOptions): Promise<WaitOutcome> {
  // Heartbeats carry whole seconds.
  const since = Math.floor(sinceMs / 1000) * 1000;
  // Loaded here, not at the top: the API codec is big and not needed before the API server runs.
  const { RestClient } = await import('../../client/rest-client.js');
  const client = new RestClient({ connection: conn, contentType: 'application/json', maxRetries: 0, qps: 0, userAgent: 'corectl-server' });
  try {
    return await poll(async (signal) => {
      const node = await client.get({ group: '', version: 'v1', resource: 'nodes' }, nodeName, { signal }) as NodeLike;
      return (node.status?.conditions ?? []).some((c) =>
        c.type === 'Ready' && c.status === 'True' && Date.parse(c.lastHeartbeatTime ?? '') >= since);
    }, { firstDelayMs: 50, maxDelayMs: 500, ...o });
  } finally {
    client.close();
  }
}
