/**
 * A SPDY/3.1 session over an upgraded connection, as Kubernetes streaming uses it (exec, attach
 * and port-forward between kubectl, the API server, the node agent and the runtime's streaming
 * server): streams opened by either side with a few headers, bytes both ways, FIN to half-close.
 *
 * Facts this follows (Go's spdystream, the peer on the other end): stream ids are odd for the
 * client and even for the server; a stream is usable once SYN_REPLY arrives, and data sent
 * before it may be dropped, so openStream() resolves only after the reply; flow control is not
 * used by that peer (it neither sends nor honours WINDOW_UPDATE), so none is applied here —
 * backpressure comes from the socket and from pausing the socket while a reader lags.
 *
 * Contract: frames are handled strictly in arrival order (header blocks share one zlib state);
 * outgoing header frames are compressed and written in call order. When the socket closes,
 * every open stream ends (readable side) and is destroyed; `closed` resolves.
 */
import { Duplex } from 'node:stream';
import { pino, type Logger } from 'pino';
import { controlFrame, dataFrame, FLAG_FIN, FLAG_UNIDIRECTIONAL, FrameReader, FrameType, RstStatus, SpdyProtocolError, words, type Frame } from './frames.js';
import { HeaderCompressor, HeaderDecompressor, type SpdyHeaders } from './header-codec.js';

/** Bytes per DATA frame we write (Go's peers read any size up to 16 MiB). */
const WRITE_CHUNK = 32 * 1024;

export interface SpdySessionOptions {
  /** True when this side opened the connection (odd stream ids). */
  readonly client: boolean;
  /** Called for each stream the peer opens; call stream.reply() to accept it. */
  readonly onStream?: (stream: SpdyStream) => void;
  readonly log?: Logger;
}

export class SpdyStream extends Duplex {
  /** Headers the stream was opened with (ours or the peer's). */
  readonly headers: Record<string, string[]>;
  private ready: Promise<void>;
  private markReady!: () => void;
  private failReady!: (e: Error) => void;
  private localDone = false;
  private remoteDone = false;

  constructor(readonly id: number, private readonly session: SpdySession, headers: Record<string, string[]>) {
    super({ allowHalfOpen: true });
    this.headers = headers;
    this.ready = new Promise<void>((resolve, reject) => { this.markReady = resolve; this.failReady = reject; });
    this.ready.catch(() => undefined);
  }

  /** The first value of a header, lower-case name. */
  header(name: string): string | undefined { return this.headers[name]?.[0]; }

  /** Accepts a stream the peer opened (SYN_REPLY). */
  async reply(headers: SpdyHeaders = {}): Promise<void> {
    await this.session.sendHeaderFrame(FrameType.SynReply, 0, words(this.id), headers);
    this.markReady();
  }

  /** Aborts the stream with RST_STREAM (CANCEL by default). */
  reset(status: number = RstStatus.Cancel): void {
    this.session.writeRaw(controlFrame(FrameType.RstStream, 0, words(this.id, status)));
    this.finish(new Error('stream reset locally'));
  }

  /** @internal */ replied(): void { this.markReady(); }
  /** @internal */ opened(): Promise<void> { return this.ready; }
  /** @internal */ localFinished(): void { this.localDone = true; this.maybeForget(); }

  /** @internal data from the peer */
  incoming(data: Buffer, fin: boolean): void {
    if (data.length > 0 && !this.remoteDone && !this.push(data)) this.session.pauseFor(this);
    if (fin) this.remoteEnded();
  }

  /** @internal */
  remoteEnded(): void {
    if (this.remoteDone) return;
    this.remoteDone = true;
    this.push(null);
    this.maybeForget();
  }

  /**
   * @internal the stream is over (reset by either side, or the session ended): the readable
   * side ends after what was already received, writes are dropped from now on.
   */
  finish(err?: Error): void {
    this.failReady(err ?? new Error('stream closed'));
    this.localDone = true;
    this.session.forget(this.id);
    if (!this.remoteDone) { this.remoteDone = true; this.push(null); }
  }

  private maybeForget(): void { if (this.localDone && this.remoteDone) this.session.forget(this.id); }

  override _read(): void { this.session.resumeFor(this); }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    this.ready.then(async () => {
      if (this.localDone) { cb(); return; }
      for (let at = 0; at < chunk.length; at += WRITE_CHUNK) {
        await this.session.writeData(this.id, 0, chunk.subarray(at, at + WRITE_CHUNK));
      }
      cb();
    }, () => cb());
  }

  override _final(cb: (e?: Error | null) => void): void {
    this.ready.then(async () => {
      if (this.localDone) { cb(); return; }
      await this.session.writeData(this.id, FLAG_FIN, Buffer.alloc(0));
      this.localFinished();
      cb();
    }, () => cb());
  }

  override _destroy(err: Error | null, cb: (e?: Error | null) => void): void {
    this.session.forget(this.id);
    cb(err);
  }
}

export class SpdySession {
  private readonly reader = new FrameReader();
  private readonly compressor = new HeaderCompressor();
  private readonly decompressor = new HeaderDecompressor();
  private readonly streams = new Map<number, SpdyStream>();
  private readonly pausedBy = new Set<SpdyStream>();
  private nextId: number;
  private processing: Promise<void> = Promise.resolve();
  private headerTail: Promise<unknown> = Promise.resolve();
  private ended = false;
  private readonly log: Logger;
  /** Resolves when the connection is gone. */
  readonly closed: Promise<void>;

  constructor(private readonly socket: Duplex, private readonly options: SpdySessionOptions) {
    this.log = options.log ?? pino({ level: 'silent' });
    this.nextId = options.client ? 1 : 2;
    this.closed = new Promise<void>((resolve) => {
      socket.once('close', () => { this.shutdown(); resolve(); });
    });
    socket.on('error', (e: Error) => { this.log.debug({ err: e.message }, 'spdy socket error'); });
    socket.on('end', () => { this.shutdown(); socket.destroy(); });
    socket.on('data', (chunk: Buffer) => {
      let frames: Frame[];
      try { frames = this.reader.push(chunk); } catch (e) { this.fail(e as Error); return; }
      for (const f of frames) this.processing = this.processing.then(() => this.handle(f)).catch((e: Error) => this.fail(e));
    });
  }

  /** Opens a stream and waits for the peer's SYN_REPLY. */
  async openStream(headers: SpdyHeaders): Promise<SpdyStream> {
    if (this.ended) throw new Error('SPDY session is closed');
    const id = this.nextId;
    this.nextId += 2;
    const lists: Record<string, string[]> = {};
    for (const [k, v] of Object.entries(headers)) lists[k.toLowerCase()] = Array.isArray(v) ? v : [v];
    const stream = new SpdyStream(id, this, lists);
    this.streams.set(id, stream);
    // Priority 0, no associated stream, slot 0.
    const prefix = Buffer.concat([words(id, 0), Buffer.from([0, 0])]);
    await this.sendHeaderFrame(FrameType.SynStream, 0, prefix, headers);
    await stream.opened();
    return stream;
  }

  /** Sends GOAWAY and closes the connection once written. */
  close(): void {
    if (this.ended) return;
    this.writeRaw(controlFrame(FrameType.GoAway, 0, words(0, 0)));
    this.socket.end();
  }

  destroy(): void { this.socket.destroy(); this.shutdown(); }

  /** @internal compresses and writes a frame carrying a header block, in call order. */
  sendHeaderFrame(type: number, flags: number, prefix: Buffer, headers: SpdyHeaders): Promise<void> {
    const step = this.headerTail.then(async () => {
      const block = await this.compressor.compress(headers);
      this.writeRaw(controlFrame(type, flags, Buffer.concat([prefix, block])));
    });
    this.headerTail = step.catch(() => undefined);
    return step;
  }

  /** @internal */
  writeRaw(frame: Buffer): boolean {
    if (this.ended || this.socket.destroyed) return false;
    return this.socket.write(frame);
  }

  /** @internal writes one DATA frame; resolves when the socket can take more. */
  writeData(streamId: number, flags: number, data: Buffer): Promise<void> {
    if (this.ended || this.socket.destroyed) return Promise.resolve(); // the owner learns of it from `closed`
    if (this.socket.write(dataFrame(streamId, flags, data))) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => { this.socket.off('drain', done); this.socket.off('close', done); resolve(); };
      this.socket.once('drain', done);
      this.socket.once('close', done);
    });
  }

  /** @internal */ forget(id: number): void { const s = this.streams.get(id); this.streams.delete(id); if (s) this.resumeFor(s); }

  /** @internal a stream's reader is full: stop reading the socket until it drains. */
  pauseFor(s: SpdyStream): void { this.pausedBy.add(s); this.socket.pause(); }
  /** @internal */
  resumeFor(s: SpdyStream): void {
    if (!this.pausedBy.delete(s)) return;
    if (this.pausedBy.size === 0 && !this.ended) this.socket.resume();
  }

  private async handle(f: Frame): Promise<void> {
    if (f.kind === 'data') {
      const s = this.streams.get(f.streamId);
      if (!s) return; // a stream we already forgot: its late data is dropped
      s.incoming(f.data, (f.flags & FLAG_FIN) !== 0);
      return;
    }
    const p = f.payload;
    const need = (n: number): void => { if (p.length < n) throw new SpdyProtocolError(`control frame ${f.type} too short`); };
    switch (f.type) {
      case FrameType.SynStream: {
        need(10);
        const id = p.readUInt32BE(0) & 0x7fffffff;
        const headers = await this.decompressor.decompress(p.subarray(10));
        const stream = new SpdyStream(id, this, headers);
        this.streams.set(id, stream);
        if (f.flags & FLAG_UNIDIRECTIONAL) stream.localFinished();
        if (f.flags & FLAG_FIN) stream.remoteEnded();
        if (this.options.onStream) this.options.onStream(stream);
        else stream.reset(RstStatus.RefusedStream);
        return;
      }
      case FrameType.SynReply: {
        need(4);
        const id = p.readUInt32BE(0) & 0x7fffffff;
        if (p.length > 4) await this.decompressor.decompress(p.subarray(4));
        const s = this.streams.get(id);
        if (!s) return;
        s.replied();
        if (f.flags & FLAG_FIN) s.remoteEnded();
        return;
      }
      case FrameType.Headers: {
        need(4);
        const id = p.readUInt32BE(0) & 0x7fffffff;
        if (p.length > 4) await this.decompressor.decompress(p.subarray(4));
        if (f.flags & FLAG_FIN) this.streams.get(id)?.remoteEnded();
        return;
      }
      case FrameType.RstStream: {
        need(8);
        const id = p.readUInt32BE(0) & 0x7fffffff;
        this.streams.get(id)?.finish(new Error(`stream reset by peer (status ${p.readUInt32BE(4)})`));
        return;
      }
      case FrameType.Ping: {
        need(4);
        const id = p.readUInt32BE(0);
        // Answer the peer's pings (their parity differs from ours); ours are not sent.
        if ((id & 1) !== (this.options.client ? 1 : 0)) this.writeRaw(controlFrame(FrameType.Ping, 0, words(id)));
        return;
      }
      default:
        // GOAWAY (the peer closes the connection after it), SETTINGS, WINDOW_UPDATE and unknown
        // types carry nothing we act on.
        return;
    }
  }

  private fail(e: Error): void {
    this.log.debug({ err: e.message }, 'spdy protocol error');
    this.destroy();
  }

  private shutdown(): void {
    if (this.ended) return;
    this.ended = true;
    for (const s of [...this.streams.values()]) s.finish(new Error('SPDY connection closed'));
    this.streams.clear();
    this.compressor.close();
    this.decompressor.close();
  }
}
