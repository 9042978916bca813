/**
 * Kubernetes protobuf objects: the `k8s\0` magic + runtime.Unknown{typeMeta{apiVersion, kind},
 * raw = the object's own message, contentEncoding '', contentType ''}.
 *
 * The message is chosen by the object's apiVersion and kind through the schema registry
 * (lists and meta kinds such as Status included). Kinds without a protobuf form (meta Table,
 * custom resources) get 406 Not Acceptable on encode.
 *
 * Loss: JSON fields the schema does not declare are dropped when encoding (Go's typed structs
 * would drop them the same way on decode). Storage therefore keeps JSON; protobuf is only
 * spoken at the HTTP edge, where the client asked for it.
 */
import protobuf from 'protobufjs/minimal.js';
import { ApiError, errors } from '../meta/status.js';
import type { KubeObject } from '../resources/types.js';
import { messageForObject } from '../schema/registry.js';
import { decodeMessage, setEnvelopedDecoder, writeMessage } from './protobuf-message.js';

export const PROTOBUF_MEDIA_TYPE = 'application/vnd.kubernetes.protobuf';
export const PROTOBUF_MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);


/** Kinds that Kubernetes never serves as protobuf. */
const NO_PROTOBUF_KINDS = new Set(['Table']);

export function hasProtobufMagic(buf: Uint8Array): boolean {
  return buf.length >= 4 && buf[0] === 0x6b && buf[1] === 0x38 && buf[2] === 0x73 && buf[3] === 0x00;
}

function notAcceptable(apiVersion: string, kind: string): never {
  throw errors.notAcceptable(`${apiVersion}, Kind=${kind} as ${PROTOBUF_MEDIA_TYPE}`, ['application/json', 'application/yaml']);
}

/** Encodes an object (with apiVersion and kind) as an enveloped Kubernetes protobuf message. */
export function encodeProtobuf(obj: KubeObject): Buffer {
  const apiVersion = obj.apiVersion ?? '';
  const kind = obj.kind ?? '';
  if (!kind || NO_PROTOBUF_KINDS.has(kind)) notAcceptable(apiVersion, kind);
  const msg = messageForObject(apiVersion, kind);
  if (!msg) notAcceptable(apiVersion, kind);
  return encodeEnvelope(apiVersion, kind, (w) => writeMessage(w, msg.name, obj));
}

/**
 * The Kubernetes protobuf envelope: `k8s\0` + runtime.Unknown{typeMeta{apiVersion, kind},
 * raw, contentEncoding '', contentType ''}, with `writeRaw` writing the raw message's bytes.
 */
export function encodeEnvelope(apiVersion: string, kind: string, writeRaw: (w: protobuf.Writer) => void): Buffer {
  const w = protobuf.Writer.create();
  w.raw(PROTOBUF_MAGIC);
  w.uint32(0x0a).fork(); // Unknown.typeMeta
  w.uint32(0x0a).string(apiVersion);
  w.uint32(0x12).string(kind);
  w.ldelim();
  w.uint32(0x12).fork(); // Unknown.raw
  writeRaw(w);
  w.ldelim();
  w.uint32(0x1a).string(''); // contentEncoding
  w.uint32(0x22).string(''); // contentType
  const out = w.finish();
  return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
}

/**
 * Decodes an enveloped Kubernetes protobuf object into its JSON form (apiVersion, kind set).
 * A body that is not one is always a 400, worded as Kubernetes' decoding errors are: `into` is
 * the kind the request is about (the one the body should decode into; the body's own kind when
 * not given).
 */
export function decodeProtobuf(buf: Buffer, into?: string): KubeObject {
  if (!hasProtobufMagic(buf)) throw unrecognized(into, `provided data does not appear to be a protobuf message, expected prefix [${[...PROTOBUF_MAGIC].join(' ')}]`, buf);
  if (buf.length === PROTOBUF_MAGIC.length) throw unrecognized(into, 'empty body', buf);
  let envelope: ReturnType<typeof readUnknown>;
  try {
    envelope = readUnknown(buf.subarray(4));
  } catch (e) {
    throw unrecognized(into, baseError(e), buf);
  }
  const { apiVersion, kind, raw, contentEncoding } = envelope;
  if (contentEncoding !== '') throw errors.badRequest(`unsupported protobuf content encoding ${JSON.stringify(contentEncoding)}`);
  if (!kind) throw errors.badRequest('Object \'Kind\' is missing in protobuf body');
  const msg = messageForObject(apiVersion, kind);
  if (!msg) throw errors.badRequest(`no kind "${kind}" is registered for version "${apiVersion}" in protobuf`);
  let body: Record<string, unknown>;
  try {
    body = decodeMessage(msg.name, raw);
  } catch (e) {
    if (e instanceof ApiError && e.code !== 400) throw e;
    const version = apiVersion.slice(apiVersion.indexOf('/') + 1);
    throw errors.badRequest(`${kind} in version ${JSON.stringify(version)} cannot be handled as a ${into ?? kind}: ${baseError(e)}`);
  }
  // Lists always carry `items` in Kubernetes' JSON, even when empty (protobuf omits empty lists).
  if (kind.endsWith('List') && body['items'] === undefined && msg.fields.some((f) => f.name === 'items')) body['items'] = [];
  return { apiVersion, kind, ...body };
}

/** Kubernetes' wording for a body that is no object it knows (transformDecodeError without a kind). */
function unrecognized(into: string | undefined, base: string, body: Buffer): ApiError {
  return errors.badRequest(`the object provided is unrecognized (must be of type ${into ?? 'Unknown'}): ${base} (${summarize(body)})`);
}

/** Kubernetes' summarizeData: the first 30 bytes, as text when JSON-looking, else in hex. */
function summarize(body: Buffer): string {
  const max = 30;
  if (body.length === 0) return '<empty>';
  const head = body.subarray(0, max);
  const text = body[0] === 0x7b ? head.toString('utf8') : head.toString('hex');
  return body.length > max ? `${text} ...` : text;
}

/** The reason a message failed to decode, in the words of Go's generated protobuf code where they exist. */
function baseError(e: unknown): string {
  if (e instanceof ApiError) return e.message;
  const m = e instanceof Error ? e.message : String(e);
  // protobufjs's reader runs past the end as a RangeError ("index out of range"); Go's reader stops with io.ErrUnexpectedEOF.
  if (e instanceof RangeError || /index out of range/.test(m)) return 'unexpected EOF';
  return `proto: ${m}`;
}

/** runtime.Unknown, read by hand: it is on every protobuf request and response. Throws the reader's errors. */
function readUnknown(bytes: Uint8Array): { apiVersion: string; kind: string; raw: Uint8Array; contentEncoding: string } {
  const out: { apiVersion: string; kind: string; raw: Uint8Array; contentEncoding: string } = { apiVersion: '', kind: '', raw: new Uint8Array(0), contentEncoding: '' };
  const r = protobuf.Reader.create(bytes);
  while (r.pos < r.len) {
    const t = r.uint32();
    switch (t) {
      case 0x0a: {
        const end = r.uint32() + r.pos;
        if (end > r.len) throw new RangeError('index out of range');
        while (r.pos < end) {
          const tt = r.uint32();
          if (tt === 0x0a) out.apiVersion = r.string();
          else if (tt === 0x12) out.kind = r.string();
          else r.skipType(tt & 7);
        }
        break;
      }
      case 0x12: out.raw = r.bytes(); break;
      case 0x1a: out.contentEncoding = r.string(); break;
      default: r.skipType(t & 7);
    }
  }
  return out;
}

setEnvelopedDecoder((bytes) => decodeProtobuf(bytes));
