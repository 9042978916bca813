/** Reading request bodies (bounded) and writing objects and Status errors. */
import { gzip } from 'node:zlib';
import type { ApiRequest, ApiResponse } from '../context.js';
import { ApiError, errors } from '../../../api/meta/status.js';
import { encodeYaml } from '../../../api/codec/yaml.js';
import { encodeJson } from '../../../api/codec/json.js';
import { MAX_BODY_BYTES } from './types.js';
import type { OutputFormat } from './negotiate.js';
import { encodeProtobufOrUndefined } from './codec-adapter.js';
import { auditBodies } from '../audit/event.js';
import { bufferSource, markBusy, pieceBytesFor, writeFromSource, type BodySource } from '../body-writer.js';
import { goEscape, goOrder } from '../../../api/codec/go-json.js';

/**
 * Reads the whole body; 413 beyond the limit (checked on Content-Length first, then while
 * reading). Event listeners rather than `for await`: the async iterator machinery costs more
 * than reading a small body does.
 */
export function readBody(req: ApiRequest, limit = MAX_BODY_BYTES): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.reject(errors.tooLarge(limit));
  }
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer | string): void => {
      const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      size += b.length;
      if (size > limit) {
        cleanup();
        req.resume(); // drain the rest; the answer is already decided
        reject(errors.tooLarge(limit));
        return;
      }
      chunks.push(b);
    };
    const onEnd = (): void => {
      cleanup();
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
      const audited = auditBodies.get(req);
      if (audited) audited.requestBody = body;
      resolve(body);
    };
    const onError = (e: Error): void => { cleanup(); reject(e); };
    // The client went away before the end: nothing more will come.
    const onClose = (): void => { cleanup(); reject(new Error('the request body ended early: the client went away')); };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

const COMMON_HEADERS = { 'Cache-Control': 'no-cache, private' };

/** Serializes an object in the negotiated format. */
export function encodeFor(format: OutputFormat, obj: unknown): { body: Buffer; contentType: string } {
  if (format.mediaType === 'application/yaml') return { body: encodeYaml(goOrder(obj)), contentType: 'application/yaml' };
  if (format.mediaType === 'application/vnd.kubernetes.protobuf') {
    const pb = encodeProtobufOrUndefined(obj);
    if (pb) return { body: pb, contentType: 'application/vnd.kubernetes.protobuf' };
  }
  // As Kubernetes' encoder: Go's field order and escapes, a newline after a compact body
  // (json.Encoder), none after an indented one (json.MarshalIndent).
  const body = format.pretty ? Buffer.from(goEscape(JSON.stringify(goOrder(obj), null, 2)), 'utf8') : encodeJson(obj);
  return { body, contentType: format.contentType ?? 'application/json' };
}

export function writeObject(res: ApiResponse, code: number, obj: unknown, format: OutputFormat, extraHeaders?: Record<string, string | string[]>): void {
  const { body, contentType } = encodeFor(format, obj);
  writeBody(res, code, body, contentType, extraHeaders);
}

/**
 * Bodies larger than this are sent gzip-compressed to a client that accepts it, when the
 * APIResponseCompression gate is on (Kubernetes' threshold and level: 128 KiB, level 1).
 */
export const GZIP_THRESHOLD_BYTES = 128 * 1024;
const GZIP_LEVEL = 1;

/** Responses that may be compressed (see allowCompression). */
const compressible = new WeakSet<ApiResponse>();

/**
 * Marks a response as compressible when its request accepts gzip (an Accept-Encoding token
 * `gzip` without q=0); the REST layer calls it when the APIResponseCompression gate is on.
 */
export function allowCompression(req: ApiRequest, res: ApiResponse): void {
  const accept = req.headers['accept-encoding'];
  if (accept === undefined) return;
  for (const part of String(accept).split(',')) {
    const [token, ...params] = part.split(';');
    if (token!.trim().toLowerCase() !== 'gzip') continue;
    if (params.some((p) => /^\s*q\s*=\s*0(\.0*)?\s*$/i.test(p))) return;
    compressible.add(res);
    return;
  }
}

/**
 * Writes an already encoded body with the headers writeObject sends. A body given as a source
 * (the list writers') is made piece by piece as it is sent; a large body goes out as the
 * connection drains (body-writer.ts).
 */
export function writeBody(res: ApiResponse, code: number, body: Buffer | BodySource, contentType: string, extraHeaders?: Record<string, string | string[]>): void {
  res.statusCode = code;
  for (const k in COMMON_HEADERS) res.setHeader(k, COMMON_HEADERS[k as keyof typeof COMMON_HEADERS]);
  if (extraHeaders) for (const k in extraHeaders) res.setHeader(k, extraHeaders[k]!);
  res.setHeader('Content-Type', contentType);
  if (body.length > GZIP_THRESHOLD_BYTES && compressible.has(res)) {
    // Compressed whole (gzip's output length is the Content-Length), on libuv's thread pool,
    // not on the event loop; the response counts as busy meanwhile. A response the request
    // timeout or a disconnect finished meanwhile is left as it is.
    const whole = Buffer.isBuffer(body) ? body : wholeBody(body);
    const done = markBusy(res);
    gzip(whole, { level: GZIP_LEVEL }, (err, zipped) => {
      done();
      if (res.headersSent || res.writableEnded || res.destroyed) return;
      if (!err) {
        res.setHeader('Content-Encoding', 'gzip');
        res.setHeader('Vary', 'Accept-Encoding');
      }
      const out = err ? whole : zipped;
      res.setHeader('Content-Length', String(out.length));
      writeFromSource(res, bufferSource(out, pieceBytesFor(res)));
    });
    return;
  }
  res.setHeader('Content-Length', String(body.length));
  if (!Buffer.isBuffer(body)) writeFromSource(res, body);
  else if (body.length <= pieceBytesFor(res)) res.end(body);
  else writeFromSource(res, bufferSource(body, pieceBytesFor(res)));
}

function wholeBody(source: BodySource): Buffer {
  const pieces: Buffer[] = [];
  for (let p = source.next(); p !== undefined; p = source.next()) pieces.push(p);
  return Buffer.concat(pieces, source.length);
}

export function writeError(res: ApiResponse, err: ApiError, format?: OutputFormat): void {
  if (res.headersSent) { res.end(); return; }
  const fmt: OutputFormat = format && format.mediaType !== 'application/vnd.kubernetes.protobuf' ? { ...format, contentType: undefined } : { mediaType: 'application/json', target: 'object' };
  for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
  writeObject(res, err.code, err.status, fmt);
}

export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  return errors.internal(e instanceof Error ? e.message : String(e), e);
}
