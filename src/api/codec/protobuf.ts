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
import { errors } from '../meta/status.js';
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

/** Decodes an enveloped Kubernetes protobuf object into its JSON form (apiVersion, kind set). */
export function decodeProtobuf(buf: Buffer): KubeObject {
  if (!hasProtobufMagic(buf)) throw errors.badRequest('protobuf body does not start with the Kubernetes "k8s\\0" prefix');
  const { apiVersion, kind, raw, contentEncoding } = readUnknown(buf.subarray(4));
  if (contentEncoding !== '') throw errors.badRequest(`unsupported protobuf content encoding ${JSON.stringify(contentEncoding)}`);
  if (!kind) throw errors.badRequest('Object \'Kind\' is missing in protobuf body');
  const msg = messageForObject(apiVersion, kind);
  if (!msg) throw errors.badRequest(`no kind "${kind}" is registered for version "${apiVersion}" in protobuf`);
  const body = decodeMessage(msg.name, raw);
  // Lists always carry `items` in Kubernetes' JSON, even when empty (protobuf omits empty lists).
  if (kind.endsWith('List') && body['items'] === undefined && msg.fields.some((f) => f.name === 'items')) body['items'] = [];
  return { apiVersion, kind, ...body };
}

/** runtime.Unknown, read by hand: it is on every protobuf request and response. */
function readUnknown(bytes: Uint8Array): { apiVersion: string; kind: string; raw: Uint8Array; contentEncoding: string } {
  const out: { apiVersion: string; kind: string; raw: Uint8Array; contentEncoding: string } = { apiVersion: '', kind: '', raw: new Uint8Array(0), contentEncoding: '' };
  try {
    const r = protobuf.Reader.create(bytes);
    while (r.pos < r.len) {
      const t = r.uint32();
      switch (t) {
        case 0x0a: {
          const end = r.uint32() + r.pos;
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
  } catch (e) {
    throw errors.badRequest(`malformed protobuf envelope: ${(e as Error).message}`);
  }
  return out;
}

setEnvelopedDecoder((bytes) => decodeProtobuf(bytes));
