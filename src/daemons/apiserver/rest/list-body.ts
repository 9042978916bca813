/**
 * LIST bodies of the read fast paths (entry-reads.ts) as sources of pieces (body-writer.ts):
 * the bytes are made a piece at a time as the connection drains, from the items' remembered
 * bytes or splice plans, so a list being sent to a slow reader costs this process a piece or
 * two, not the whole body. Byte for byte what JSON.stringify / encodeProtobuf write for the list
 * (test/apiserver/list-body.test.ts compares them).
 */
import protobuf from 'protobufjs/minimal.js';
import { PROTOBUF_MAGIC } from '../../../api/codec/protobuf.js';
import { encodeMessage } from '../../../api/codec/protobuf-message.js';
import type { KeyValue } from '../../../storage/interface.js';
import { BODY_PIECE_BYTES, type BodySource } from '../body-writer.js';
import { splicedLength, writeSpliced, type SplicePlan } from './json-splice.js';
import type { ProtobufListPlan } from './protobuf-entries.js';
import { goEscape, goOrderAs } from '../../../api/codec/go-json.js';

/**
 * head + part 0 + … + part n-1 + tail, the parts' lengths known in advance: pieces of up to
 * `pieceBytes`, filled with whole parts (a part larger than a piece is a piece of its own).
 * Contract: writePart(i) writes exactly lengths[i] bytes.
 */
export function partsSource(
  head: Buffer,
  lengths: readonly number[],
  writePart: (i: number, out: Buffer, at: number) => number,
  tail: Buffer,
  pieceBytes = BODY_PIECE_BYTES,
): BodySource {
  let length = head.length + tail.length;
  for (const n of lengths) length += n;
  let remaining = length;
  let headDone = false;
  let i = 0;
  let tailDone = false;
  const count = lengths.length;
  return {
    length,
    next(): Buffer | undefined {
      if (tailDone) return undefined;
      if (!headDone && head.length > pieceBytes) { headDone = true; remaining -= head.length; return head; }
      let size = Math.min(pieceBytes, remaining);
      if (headDone) {
        // A part (or the tail) larger than a piece goes alone, in a piece of its size.
        const first = i < count ? lengths[i]! : tail.length;
        if (first > size) size = first;
      }
      const out = Buffer.allocUnsafe(size);
      let at = 0;
      if (!headDone) { at += head.copy(out, 0); headDone = true; }
      while (i < count && at + lengths[i]! <= size) at = writePart(i++, out, at);
      if (i === count && at + tail.length <= size) { at += tail.copy(out, at); tailDone = true; }
      remaining -= at;
      return at === size ? out : out.subarray(0, at);
    },
  };
}

/**
 * The JSON list body as Kubernetes writes it ({kind, apiVersion, metadata, items} in Go's
 * order and escapes, a newline at the end) with the items written from their bytes or splice plans.
 */
export function jsonListSource(kind: string, apiVersion: string, metadata: Record<string, unknown>, entries: readonly KeyValue[], items: readonly (Buffer | SplicePlan)[], pieceBytes?: number): BodySource {
  // The head without its closing brace.
  const head = Buffer.from(`${goEscape(JSON.stringify({ kind, apiVersion, metadata: goOrderAs(LIST_META, metadata) })).slice(0, -1)},"items":[`, 'utf8');
  const lengths = new Array<number>(items.length);
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    lengths[i] = (i > 0 ? 1 : 0) + (Buffer.isBuffer(item) ? item.length : splicedLength(item, entries[i]!.modRevision));
  }
  const writePart = (i: number, out: Buffer, at: number): number => {
    if (i > 0) out[at++] = 0x2c;
    const item = items[i]!;
    if (Buffer.isBuffer(item)) return at + item.copy(out, at);
    const kv = entries[i]!;
    return writeSpliced(item, kv.value, kv.modRevision, out, at);
  };
  return partsSource(head, lengths, writePart, LIST_TAIL, pieceBytes);
}

const LIST_TAIL = Buffer.from(']}\n', 'latin1');
const LIST_META = 'k8s.io.apimachinery.pkg.apis.meta.v1.ListMeta';

/** Bytes of `n` as a varint. */
function varintLength(n: number): number {
  let len = 1;
  for (let v = n >>> 0; v >= 0x80; v >>>= 7) len++;
  return len;
}

function writeVarint(n: number, out: Buffer, at: number): number {
  let v = n >>> 0;
  while (v >= 0x80) { out[at++] = (v & 0x7f) | 0x80; v >>>= 7; }
  out[at++] = v;
  return at;
}

/**
 * The enveloped protobuf list: `k8s\0` + Unknown{typeMeta, raw = metadata + items, '', ''}, the
 * items (bare item messages) written as length-delimited `items` fields. Throws when the
 * metadata has no protobuf form.
 */
export function protobufListSource(plan: ProtobufListPlan, apiVersion: string, listKind: string, metadata: unknown, items: readonly Buffer[], pieceBytes?: number): BodySource {
  // Everything but the items: the list message with no items (empty repeated fields are omitted).
  const listHead = encodeMessage(plan.listMessage, { metadata });
  const tagLength = varintLength(plan.itemsTag);
  const lengths = new Array<number>(items.length);
  let raw = listHead.length;
  for (let i = 0; i < items.length; i++) {
    const n = items[i]!.length;
    lengths[i] = tagLength + varintLength(n) + n;
    raw += lengths[i]!;
  }
  const w = protobuf.Writer.create();
  w.raw(PROTOBUF_MAGIC);
  w.uint32(0x0a).fork(); // Unknown.typeMeta
  w.uint32(0x0a).string(apiVersion);
  w.uint32(0x12).string(listKind);
  w.ldelim();
  w.uint32(0x12).uint32(raw); // Unknown.raw: its length, then the list message
  w.raw(listHead);
  const prefix = w.finish();
  const head = Buffer.from(prefix.buffer, prefix.byteOffset, prefix.byteLength);
  const writePart = (i: number, out: Buffer, at: number): number => {
    const item = items[i]!;
    at = writeVarint(plan.itemsTag, out, at);
    at = writeVarint(item.length, out, at);
    return at + item.copy(out, at);
  };
  return partsSource(head, lengths, writePart, PROTOBUF_TAIL, pieceBytes);
}

/** Unknown.contentEncoding '' and Unknown.contentType ''. */
const PROTOBUF_TAIL = Buffer.from([0x1a, 0x00, 0x22, 0x00]);
