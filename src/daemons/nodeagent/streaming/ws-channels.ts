/**
 * Kubernetes' channel protocols over WebSocket, server side (exec, attach, and the JS client's
 * port-forward). Each message is one channel byte then the payload; the `base64.` variants send
 * text messages with the channel as an ASCII digit and the payload base64-encoded.
 *
 *   channel.k8s.io / v2  stdin 0, stdout 1, stderr 2, error 3 (plain text)
 *   v3                   adds resize 4 (JSON {"Width","Height"})
 *   v4                   error 3 carries a JSON Status (exit codes as causes)
 *   v5                   a client message [255, channel] closes that channel (stdin EOF)
 *
 * The subprotocol chosen is the first one the client offers that is served here (as Go's
 * handshake does); no subprotocol at all means channel.k8s.io.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex, Readable } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';

export interface ChannelProtocol {
  readonly name: string;
  /** 1..5 as above. */
  readonly version: number;
  readonly base64: boolean;
}

const PROTOCOLS: ChannelProtocol[] = [
  { name: 'v5.channel.k8s.io', version: 5, base64: false },
  { name: 'v4.channel.k8s.io', version: 4, base64: false },
  { name: 'v4.base64.channel.k8s.io', version: 4, base64: true },
  { name: 'v3.channel.k8s.io', version: 3, base64: false },
  { name: 'v3.base64.channel.k8s.io', version: 3, base64: true },
  { name: 'v2.channel.k8s.io', version: 2, base64: false },
  { name: 'v2.base64.channel.k8s.io', version: 2, base64: true },
  { name: 'channel.k8s.io', version: 1, base64: false },
  { name: 'base64.channel.k8s.io', version: 1, base64: true },
];
const BY_NAME = new Map(PROTOCOLS.map((p) => [p.name, p]));

export const STDIN = 0;
export const STDOUT = 1;
export const STDERR = 2;
export const ERROR = 3;
export const RESIZE = 4;
const CLOSE_SIGNAL = 255;

/** Pausing a source above this many unsent bytes, resuming below a quarter of it. */
const HIGH_WATER = 1024 * 1024;

/** The offered subprotocols of a WebSocket upgrade request. */
export function offeredProtocols(req: IncomingMessage): string[] {
  const raw = req.headers['sec-websocket-protocol'];
  const joined = Array.isArray(raw) ? raw.join(',') : raw ?? '';
  return joined.split(',').map((s) => s.trim()).filter(Boolean);
}

export function isWebSocketUpgrade(req: IncomingMessage): boolean {
  return String(req.headers.upgrade ?? '').toLowerCase() === 'websocket';
}

export function chooseChannelProtocol(offered: readonly string[]): ChannelProtocol | undefined {
  if (offered.length === 0) return PROTOCOLS.find((p) => p.name === 'channel.k8s.io');
  for (const o of offered) {
    const p = BY_NAME.get(o);
    if (p) return p;
  }
  return undefined;
}

export interface ChannelHandlers {
  data(channel: number, payload: Buffer): void;
  /** v5 only: the client closed its side of a channel (stdin EOF). */
  closeChannel(channel: number): void;
  /** The WebSocket is gone. */
  closed(): void;
}

/**
 * One accepted channel connection. Messages that arrive before attach() are kept and delivered
 * to the handlers in order once they are attached.
 */
export class ChannelConnection {
  private unsent = 0;
  private readonly waiters: Array<() => void> = [];
  private handlers: ChannelHandlers | undefined;
  private early: Array<(h: ChannelHandlers) => void> = [];

  constructor(readonly ws: WebSocket, readonly protocol: ChannelProtocol) {
    ws.on('message', (msg: Buffer) => {
      let data = msg;
      if (this.protocol.base64) {
        const text = msg.toString('utf8');
        if (text.length === 0) return;
        data = Buffer.concat([Buffer.from([text.charCodeAt(0) - 48]), Buffer.from(text.slice(1), 'base64')]);
      }
      if (data.length === 0) return;
      const ch = data[0]!;
      if (ch === CLOSE_SIGNAL && this.protocol.version >= 5) {
        if (data.length > 1) this.deliver((h) => h.closeChannel(data[1]!));
        return;
      }
      const payload = data.subarray(1);
      this.deliver((h) => h.data(ch, payload));
    });
    ws.on('close', () => { this.release(); this.deliver((h) => h.closed()); });
    ws.on('error', () => { /* 'close' follows */ });
  }

  attach(h: ChannelHandlers): void {
    this.handlers = h;
    for (const e of this.early.splice(0)) e(h);
  }

  private deliver(e: (h: ChannelHandlers) => void): void {
    if (this.handlers) e(this.handlers);
    else this.early.push(e);
  }

  get open(): boolean { return this.ws.readyState === this.ws.OPEN; }

  /** Sends one message on a channel; resolves when the connection can take more. */
  send(channel: number, payload: Buffer): Promise<void> {
    if (!this.open) return Promise.resolve();
    const msg = this.protocol.base64
      ? String.fromCharCode(48 + channel) + payload.toString('base64')
      : Buffer.concat([Buffer.from([channel]), payload]);
    const size = typeof msg === 'string' ? msg.length : msg.length;
    this.unsent += size;
    this.ws.send(msg, { binary: !this.protocol.base64 }, () => {
      this.unsent -= size;
      if (this.unsent < HIGH_WATER / 4) this.release();
    });
    if (this.unsent < HIGH_WATER) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Copies a readable (a runtime stream) to a channel, pausing it while the client lags. */
  pipeFrom(source: Readable, channel: number): Promise<void> {
    return new Promise((resolve) => {
      source.on('data', (c: Buffer) => {
        const wait = this.send(channel, c);
        source.pause();
        void wait.then(() => source.resume());
      });
      source.once('end', () => resolve());
      source.once('close', () => resolve());
    });
  }

  /** Closes normally (1000) after what was sent. */
  close(): void { if (this.open) this.ws.close(1000); }

  private release(): void { for (const w of this.waiters.splice(0)) w(); }
}

/** The subprotocol each pending upgrade was answered with (read by the one server below). */
const chosenFor = new WeakMap<IncomingMessage, string>();
const wss = new WebSocketServer({
  noServer: true, perMessageDeflate: false, clientTracking: false,
  handleProtocols: (_offered, req) => chosenFor.get(req) || false,
});

/**
 * Completes the WebSocket handshake with `protocol` as the chosen subprotocol (or none, when the
 * client offered none).
 */
export function acceptWebSocket(req: IncomingMessage, socket: Duplex, head: Buffer, protocol: string): Promise<WebSocket> {
  chosenFor.set(req, protocol);
  return new Promise((resolve) => wss.handleUpgrade(req, socket, head, (ws) => resolve(ws)));
}
