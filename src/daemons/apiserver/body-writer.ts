/**
 * Response bodies written as the connection drains (issue 27: slow readers). A body up to a
 * piece (pieceBytesFor) goes out in one `end(body)`, as before; a larger one is written a piece at a
 * time, the next piece only after the response drained, so a client that reads slowly (or not
 * at all) holds about one piece (and its TLS records) beyond the socket's buffer, not the
 * whole body and its TLS records. Pieces come from a `BodySource`, which may make them on
 * demand (the list writers do), so the whole body need not exist at once either.
 *
 * While such a body is being written its response is "busy" (`bodyWriting`): the in-flight
 * limit keeps the request's seat and the request timeout keeps running until the last piece was
 * handed to `end()` or the client went away, as a Go handler blocked on its write would.
 *
 * Contract: one body per response; the caller has set status and headers (Content-Length too).
 */
import type { Socket } from 'node:net';
import type { ApiResponse } from './context.js';
import { H2Response } from './h2-response.js';

/**
 * Largest body written in one go, and the size of the pieces a larger one is written in, on
 * HTTP/1.1: TLS encrypts a write at once, so a piece blocked on a slow reader is held twice.
 */
export const BODY_PIECE_BYTES = 64 * 1024;

/**
 * The same on HTTP/2, larger: a stream's data is framed and encrypted only as the client's flow
 * control window allows (a blocked piece is held once, with no TLS copy), and splitting a body
 * into stream writes costs CPU (the read bench's 0.5 MiB pages took about a tenth to a fifth
 * more server CPU in 256 KiB pieces than in one write; 1 MiB pieces leave them as they were).
 * An unread stream thus holds at most 1 MiB here.
 */
export const H2_BODY_PIECE_BYTES = 1024 * 1024;

/** The piece size for bodies written on `res`. */
export function pieceBytesFor(res: ApiResponse): number {
  return res instanceof H2Response ? H2_BODY_PIECE_BYTES : BODY_PIECE_BYTES;
}

/** A body of a known length, handed out piece by piece (undefined once all were handed out). */
export interface BodySource {
  readonly length: number;
  next(): Buffer | undefined;
}

/** A whole buffer as a source of pieces of at most `piece` bytes (views, no copies). */
export function bufferSource(body: Buffer, piece = BODY_PIECE_BYTES): BodySource {
  let at = 0;
  let started = false;
  return {
    length: body.length,
    next(): Buffer | undefined {
      if (started && at >= body.length) return undefined;
      started = true; // an empty body is one empty piece
      const start = at;
      at = Math.min(body.length, at + piece);
      return start === 0 && at === body.length ? body : body.subarray(start, at);
    },
  };
}

/** Responses whose body is still being written, each with the promise settled when it is done. */
const writing = new WeakMap<ApiResponse, Promise<void>>();

/** Settled once the body `res` is writing has been handed over in full or the client is gone; undefined when none is being written. */
export function bodyWriting(res: ApiResponse | undefined): Promise<void> | undefined {
  return res ? writing.get(res) : undefined;
}

/** Per HTTP/1.1 socket, the busy responses to settle when it closes (one listener per socket). */
const onSocketClose = new WeakMap<Socket, Set<() => void>>();

/**
 * The HTTP/1.1 socket of a response. A pipelined response still queued behind another gets no
 * 'close' of its own when the connection goes; its request's socket does.
 */
function socketOf(res: ApiResponse): Socket | undefined {
  if (res instanceof H2Response) return undefined;
  return res.req?.socket ?? res.socket ?? undefined;
}

/**
 * Marks `res` busy until the returned function is called or the response (or its HTTP/1.1
 * connection) closes; `gone` runs in the latter case.
 */
export function markBusy(res: ApiResponse, gone?: () => void): () => void {
  let settle!: () => void;
  const done = new Promise<void>((r) => { settle = r; });
  const socket = socketOf(res);
  let finished = false;
  const finish = (): void => {
    if (finished) return;
    finished = true;
    res.off('close', onGone);
    if (socket) onSocketClose.get(socket)?.delete(onGone);
    writing.delete(res);
    settle();
  };
  const onGone = (): void => { if (!finished) { finish(); gone?.(); } };
  writing.set(res, done);
  res.once('close', onGone);
  if (socket) {
    if (socket.destroyed) { process.nextTick(onGone); return finish; }
    let set = onSocketClose.get(socket);
    if (!set) {
      const waiting = new Set<() => void>();
      set = waiting;
      onSocketClose.set(socket, waiting);
      socket.once('close', () => { onSocketClose.delete(socket); for (const fn of waiting) fn(); });
    }
    set.add(onGone);
  }
  return finish;
}

/**
 * Writes `source` on `res` (status and headers already set): in one `end()` when it is a single
 * piece, else piece by piece as the response drains (see the file comment). A piece is made only
 * when it can be written, and the last one goes out with `end()` (known by the source's length).
 */
export function writeFromSource(res: ApiResponse, source: BodySource): void {
  const first = source.next();
  if (first === undefined || first.length >= source.length) { endWith(res, first); return; }
  let left = source.length;
  let piece: Buffer | undefined = first;
  let stopped = false;
  const done = markBusy(res, () => { stopped = true; });
  const step = (): void => {
    while (!stopped) {
      if (res.destroyed) { done(); return; }
      piece ??= source.next();
      if (piece === undefined || piece.length >= left) { endWith(res, piece); done(); return; }
      left -= piece.length;
      const ok = res.write(piece);
      piece = undefined;
      if (!ok) { res.once('drain', step); return; }
    }
  };
  step();
}

function endWith(res: ApiResponse, piece: Buffer | undefined): void {
  if (piece === undefined || piece.length === 0) res.end(); else res.end(piece);
}
