/**
 * A TCP relay that can cut the network between two processes on loopback: `cut()` drops every
 * relayed connection (RST, as a failing link looks to the ends) and refuses new ones until
 * `heal()`. For the fault suite's "cut off" cases (a node agent from its API servers, an API
 * server from etcd) where killing either end would test something else.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpCut {
  /** 127.0.0.1:PORT of the relay. */
  readonly address: string;
  readonly port: number;
  cut(): void;
  heal(): void;
  /**
   * The next bytes a client sends are passed on, and `delayMs` later every connection is cut
   * (new ones are accepted): a request that reached the server whose answer never comes back.
   */
  cutAfterNextRequest(delayMs: number): void;
  close(): Promise<void>;
}

export async function startTcpCut(targetHost: string, targetPort: number): Promise<TcpCut> {
  const live = new Set<Socket>();
  let isCut = false;
  let armed: number | undefined;
  /** Answers from the server are swallowed (a request is in flight whose answer must be lost). */
  let swallow = false;
  const server: Server = createServer((inbound) => {
    if (isCut) { inbound.resetAndDestroy(); return; }
    const outbound = connect({ host: targetHost, port: targetPort });
    live.add(inbound); live.add(outbound);
    const drop = (): void => {
      live.delete(inbound); live.delete(outbound);
      if (!inbound.destroyed) inbound.destroy();
      if (!outbound.destroyed) outbound.destroy();
    };
    inbound.on('error', drop); outbound.on('error', drop);
    inbound.on('close', drop); outbound.on('close', drop);
    inbound.on('data', () => {
      if (armed === undefined) return;
      const delay = armed;
      armed = undefined;
      swallow = true;
      setTimeout(() => { for (const s of [...live]) s.resetAndDestroy(); live.clear(); swallow = false; }, delay);
    });
    inbound.pipe(outbound);
    outbound.on('data', (chunk: Buffer) => { if (!swallow && !inbound.destroyed) inbound.write(chunk); });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    address: `127.0.0.1:${port}`,
    port,
    cut() {
      isCut = true;
      for (const s of [...live]) s.resetAndDestroy();
      live.clear();
    },
    heal() { isCut = false; },
    cutAfterNextRequest(delayMs) { armed = delayMs; },
    close: () => new Promise<void>((resolve) => {
      for (const s of live) s.destroy();
      server.close(() => resolve());
    }),
  };
}
