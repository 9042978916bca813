/**
 * Protobuf bodies built from per-entry parts, for the read fast paths (read-handlers.ts):
 * a list is its metadata, then one length-delimited `items` field per item, each item being
 * the bare message bytes remembered for its stored entry. The result is byte for byte what
 * encodeProtobuf writes for the whole list object (fields in ascending number order; a
 * repeated message field is tag + length + message), without encoding any item twice.
 */
import { encodeEnvelope } from '../../../api/codec/protobuf.js';
import { encodeMessage } from '../../../api/codec/protobuf-message.js';
import { messageForObject } from '../../../api/schema/registry.js';
import type { FieldDecl } from '../../../api/schema/types.js';

/** How a list kind is laid out: its message, the items field and the item message. */
export interface ProtobufListPlan {
  readonly listMessage: string;
  readonly itemMessage: string;
  /** Tag of the items field (number << 3 | length-delimited). */
  readonly itemsTag: number;
}

const plans = new Map<string, ProtobufListPlan | null>();

/**
 * The plan for `listKind` in `apiVersion`, or undefined when the list has no protobuf form or
 * a layout this assembly cannot reproduce (items must be the highest-numbered field).
 */
export function protobufListPlan(apiVersion: string, listKind: string): ProtobufListPlan | undefined {
  const id = `${apiVersion}|${listKind}`;
  let plan = plans.get(id);
  if (plan === undefined) {
    plan = null;
    const msg = messageForObject(apiVersion, listKind);
    const items: FieldDecl | undefined = msg?.fields.find((f) => f.name === 'items');
    if (msg && items && items.repeated && 'message' in items.type && !items.inline && msg.fields.every((f) => f.number <= items.number && !f.inline)) {
      plan = { listMessage: msg.name, itemMessage: items.type.message, itemsTag: ((items.number << 3) | 2) >>> 0 };
    }
    plans.set(id, plan);
  }
  return plan ?? undefined;
}

/** The bare message bytes of one item (JSON form without kind/apiVersion) in an owned buffer. */
export function encodeListItem(plan: ProtobufListPlan, item: unknown): Buffer {
  const b = encodeMessage(plan.itemMessage, item);
  const owned = Buffer.allocUnsafeSlow(b.length);
  b.copy(owned);
  return owned;
}

/** The enveloped list: `k8s\0` + Unknown{typeMeta, raw = metadata + items, '', ''}. */
export function encodeListFromItems(plan: ProtobufListPlan, apiVersion: string, listKind: string, metadata: unknown, items: readonly Buffer[]): Buffer {
  // Everything but the items: the list message with no items (empty repeated fields are omitted).
  const head = encodeMessage(plan.listMessage, { metadata });
  return encodeEnvelope(apiVersion, listKind, (w) => {
    w.raw(head);
    for (const item of items) w.uint32(plan.itemsTag).bytes(item);
  });
}
