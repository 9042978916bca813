/**
 * A view of the schema declarations (src/api/schema/types.ts) shaped for merging: what kind of
 * value sits at a JSON position and how lists and maps there combine. Shared by strategic
 * merge patch (patchStrategy / patchMergeKey) and server-side apply (listType / listMapKeys,
 * falling back to the patch strategy as Kubernetes' OpenAPI conversion does).
 *
 * Inline members (Go embedded structs, e.g. Volume.volumeSource) are flattened: their fields
 * are looked up as if declared on the parent, because that is how they appear in JSON.
 */
import { SPECIAL_MESSAGES, type FieldDecl, type MessageDecl, type SchemaRegistry } from '../schema/types.js';

export type ListType = 'atomic' | 'set' | 'map';

export type SchemaNode =
  /** A declared message (a Go struct); `atomic` when declared x-kubernetes-map-type atomic. */
  | { readonly kind: 'message'; readonly msg: MessageDecl; readonly atomic: boolean }
  /** map<string, V>. */
  | { readonly kind: 'map'; readonly elem: SchemaNode; readonly atomic: boolean }
  | ListNode
  /** A leaf: scalars and the special types with a scalar JSON form (Time, Quantity, ...). */
  | { readonly kind: 'scalar' }
  /** Nothing declared (unknown fields, RawExtension, CRDs without schema): maps merge, lists are atomic. */
  | { readonly kind: 'untyped' };

export interface ListNode {
  readonly kind: 'list';
  readonly elem: SchemaNode;
  readonly field: FieldDecl;
  /** Server-side apply semantics. */
  readonly listType: ListType;
  /** Key fields for listType 'map'. */
  readonly keys: readonly string[];
  /** Strategic merge patch semantics. */
  readonly strategies: readonly string[];
  readonly mergeKey?: string;
}

export const UNTYPED: SchemaNode = Object.freeze({ kind: 'untyped' });
export const SCALAR: SchemaNode = Object.freeze({ kind: 'scalar' });

const fieldCache = new WeakMap<SchemaRegistry, WeakMap<MessageDecl, ReadonlyMap<string, FieldDecl>>>();

/** The JSON-visible fields of a message, inline members flattened (cached). */
export function fieldsOf(msg: MessageDecl, reg: SchemaRegistry): ReadonlyMap<string, FieldDecl> {
  let perReg = fieldCache.get(reg);
  if (!perReg) { perReg = new WeakMap(); fieldCache.set(reg, perReg); }
  const hit = perReg.get(msg);
  if (hit) return hit;
  const out = new Map<string, FieldDecl>();
  collect(msg, reg, out, new Set());
  perReg.set(msg, out);
  return out;
}

function collect(msg: MessageDecl, reg: SchemaRegistry, out: Map<string, FieldDecl>, seen: Set<string>): void {
  if (seen.has(msg.name)) return; // defensive: an inline cycle would be a declaration bug
  seen.add(msg.name);
  for (const f of msg.fields) {
    if (f.inline && 'message' in f.type) {
      const inner = reg.message(f.type.message);
      if (inner) collect(inner, reg, out, seen);
      continue;
    }
    if (!out.has(f.name)) out.set(f.name, f);
  }
}

/** The node for a declared message (or untyped when there is no declaration). */
export function messageNode(msg: MessageDecl | undefined): SchemaNode {
  return msg ? { kind: 'message', msg, atomic: msg.structType === 'atomic' } : UNTYPED;
}

export const OBJECT_META = 'k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta';

/**
 * An undeclared top-level object (a custom resource without a schema): everything untyped
 * except `metadata`, which is ObjectMeta wherever objects live.
 */
const UNTYPED_OBJECT: MessageDecl = Object.freeze({
  name: '(untyped object)',
  fields: Object.freeze([Object.freeze({ name: 'metadata', number: 1, type: Object.freeze({ message: OBJECT_META }) })]),
});

/** The node for a top-level API object of message `msg` (undefined: a schemaless object). */
export function objectNode(msg: MessageDecl | undefined): SchemaNode {
  return messageNode(msg ?? UNTYPED_OBJECT);
}

function valueNode(f: FieldDecl, reg: SchemaRegistry): SchemaNode {
  if ('scalar' in f.type) return SCALAR;
  const name = f.type.message;
  const special = SPECIAL_MESSAGES[name];
  if (special) return special === 'RawExtension' || special === 'JSON' ? UNTYPED : SCALAR;
  const msg = reg.message(name);
  return messageNode(msg);
}

const nodeCache = new WeakMap<SchemaRegistry, WeakMap<FieldDecl, SchemaNode>>();

/** The node for the value of a declared field (cached per registry). */
export function fieldNode(f: FieldDecl, reg: SchemaRegistry): SchemaNode {
  let perReg = nodeCache.get(reg);
  if (!perReg) { perReg = new WeakMap(); nodeCache.set(reg, perReg); }
  let n = perReg.get(f);
  if (!n) { n = buildFieldNode(f, reg); perReg.set(f, n); }
  return n;
}

function buildFieldNode(f: FieldDecl, reg: SchemaRegistry): SchemaNode {
  const elem = valueNode(f, reg);
  if (f.repeated) {
    const strategies = (f.patchStrategy ?? '').split(',').map((s) => s.trim()).filter(Boolean);
    let listType: ListType;
    let keys: readonly string[] = [];
    if (f.listType === 'map' && f.listMapKeys?.length) {
      listType = 'map'; keys = f.listMapKeys;
    } else if (f.listType === 'set' || f.listType === 'atomic') {
      listType = f.listType;
    } else if (strategies.includes('merge') && f.patchMergeKey && elem.kind === 'message') {
      listType = 'map'; keys = [f.patchMergeKey];
    } else if (strategies.includes('merge') && elem.kind === 'scalar') {
      listType = 'set';
    } else {
      listType = 'atomic';
    }
    const node: ListNode = { kind: 'list', elem, field: f, listType, keys, strategies };
    return f.patchMergeKey ? { ...node, mergeKey: f.patchMergeKey } : node;
  }
  if (f.map) return { kind: 'map', elem, atomic: f.mapType === 'atomic' };
  return elem;
}

/** What sits under a key of an object: the child node and, for declared fields, the field. */
export interface Child {
  readonly node: SchemaNode;
  readonly field?: FieldDecl;
}

const UNTYPED_CHILD: Child = Object.freeze({ node: UNTYPED });
const childCache = new WeakMap<SchemaRegistry, WeakMap<MessageDecl, Map<string, Child>>>();

/**
 * What sits under `key` in an object at `node`: the child node and, for messages, its field.
 * The answers are shared (frozen) objects, cached per message: walks ask for every key of
 * every object they visit.
 */
export function childOf(node: SchemaNode, key: string, reg: SchemaRegistry): Child {
  switch (node.kind) {
    case 'message': {
      let perReg = childCache.get(reg);
      if (!perReg) { perReg = new WeakMap(); childCache.set(reg, perReg); }
      let perMsg = perReg.get(node.msg);
      if (!perMsg) { perMsg = new Map(); perReg.set(node.msg, perMsg); }
      const hit = perMsg.get(key);
      if (hit) return hit;
      const f = fieldsOf(node.msg, reg).get(key);
      if (!f) return UNTYPED_CHILD; // unknown keys are not cached: a client could send any number of them
      const c: Child = Object.freeze({ node: fieldNode(f, reg), field: f });
      perMsg.set(key, c);
      return c;
    }
    case 'map':
      return { node: node.elem };
    default:
      return UNTYPED_CHILD;
  }
}
