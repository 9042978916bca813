/**
 * port-forward for WebSocket clients.
 *
 * kubectl 1.31+ tunnels SPDY inside WebSocket (subprotocol `SPDY/3.1+portforward.k8s.io`): each
 * binary message is a slice of the SPDY byte stream. Here the runtime's streaming server speaks
 * SPDY port-forward itself, so the tunnel is unwrapped into a plain SPDY connection to it and
 * bytes are copied both ways; the SPDY frames are never parsed.
 *
 * The JS client's plain form (`v4.channel.k8s.io`, `?port=N` for each port): channel 2i is the
 * data and 2i+1 the error channel of port i; the server's first message on each starts with the
 * port as 2 bytes little-endian. Each port becomes a data and an error SPDY stream to the runtime
 * (headers streamtype, port, requestid) as kubectl would open them.
 */
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import type { SpdySession, SpdyStream } from '../../../util/spdy/session.js';
import type { ChannelConnection } from './ws-channels.js';

export const TUNNEL_PROTOCOL = 'SPDY/3.1+portforward.k8s.io';

const HIGH_WATER = 1024 * 1024;

/** Copies between a WebSocket (one binary message per chunk) and a raw connection. */
export function spliceWebSocket(ws: WebSocket, socket: Duplex): Promise<void> {
  return new Promise((resolve) => {
    let unsent = 0;
    let done = false;
    const end = (): void => {
      if (done) return;
      done = true;
      socket.destroy();
      if (ws.readyState === ws.OPEN) ws.close(1000); else ws.terminate();
      resolve();
    };
    ws.on('message', (msg: Buffer) => {
      if (!socket.write(msg)) {
        ws.pause();
        socket.once('drain', () => ws.resume());
      }
    });
    socket.on('data', (chunk: Buffer) => {
      unsent += chunk.length;
      ws.send(chunk, { binary: true }, () => {
        unsent -= chunk.length;
        if (unsent < HIGH_WATER / 4 && socket.isPaused()) socket.resume();
      });
      if (unsent >= HIGH_WATER) socket.pause();
    });
    ws.on('close', end);
    ws.on('error', end);
    socket.on('close', end);
    socket.on('error', end);
  });
}

function portPrefix(port: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(port);
  return b;
}

/** Opens the data and error streams of each port, request ids 0, 1, ... */
export async function openPortStreams(session: SpdySession, ports: readonly number[]): Promise<Array<{ port: number; data: SpdyStream; error: SpdyStream }>> {
  const out: Array<{ port: number; data: SpdyStream; error: SpdyStream }> = [];
  for (const [i, port] of ports.entries()) {
    const base = { port: String(port), requestid: String(i) };
    const error = await session.openStream({ streamtype: 'error', ...base });
    const data = await session.openStream({ streamtype: 'data', ...base });
    out.push({ port, data, error });
  }
  return out;
}

export async function bridgePortChannels(conn: ChannelConnection, session: SpdySession, streams: Awaited<ReturnType<typeof openPortStreams>>, log: Logger): Promise<void> {
  const copies: Array<Promise<void>> = [];
  for (const [i, s] of streams.entries()) {
    for (const [channel, stream] of [[2 * i, s.data], [2 * i + 1, s.error]] as const) {
      // The port announcement comes first, even when the stream never carries data.
      void conn.send(channel, portPrefix(s.port));
      copies.push(conn.pipeFrom(stream, channel));
    }
  }
  conn.attach({
    data: (ch, payload) => {
      const s = streams[ch >> 1];
      if (s && (ch & 1) === 0 && !s.data.writableEnded) s.data.write(payload);
    },
    closeChannel: (ch) => { const s = streams[ch >> 1]; if (s && (ch & 1) === 0) s.data.end(); },
    closed: () => session.destroy(),
  });
  await Promise.race([Promise.all(copies), session.closed]);
  log.debug('port-forward channels ended');
  conn.close();
  session.close();
}
