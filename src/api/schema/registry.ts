/**
 * The schema registry: every generated declaration (src/api/schema/generated/) with the hand
 * table (patch-metadata.ts) applied, indexed by fully qualified name and by group/version/kind.
 * Built on first use; immutable afterwards.
 */
import { generatedPackages, listWrapperMessages } from './generated/index.js';
import { addedFields, addedMessages, fieldPatches, kindDescriptions, metaKindsInEveryGroupVersion, packageGroupVersions, servedKinds } from './patch-metadata.js';
import { SPECIAL_MESSAGES, type FieldDecl, type MessageDecl, type SchemaRegistry, type SpecialType } from './types.js';

export const META_PACKAGE = 'k8s.io.apimachinery.pkg.apis.meta.v1';

/** A field as it appears in a message's JSON object, with the inline members it sits in. */
export interface JsonField {
  readonly field: FieldDecl;
  /** Inline (embedded) fields from the message down to the one holding `field`, outermost first. */
  readonly via: readonly FieldDecl[];
}

interface Index {
  byName: Map<string, MessageDecl>;
  byGvk: Map<string, MessageDecl>;
  gvkByMessage: Map<string, { group: string; version: string; kind: string }[]>;
}

let index: Index | undefined;

function gvkKey(group: string, version: string, kind: string): string {
  return `${group}/${version}/${kind}`;
}

function build(): Index {
  const byName = new Map<string, MessageDecl>();
  const gvkByMessage = new Map<string, { group: string; version: string; kind: string }[]>();
  const byGvk = new Map<string, MessageDecl>();
  const pending: MessageDecl[] = [];
  for (const decls of Object.values(generatedPackages)) pending.push(...decls);
  pending.push(...addedMessages);
  for (const m of pending) {
    const patches = fieldPatches[m.name] ?? {};
    let fields: FieldDecl[] = m.fields.map((f) => (patches[f.name] ? { ...f, ...patches[f.name] } : f));
    const extra = addedFields[m.name];
    if (extra) {
      for (const e of extra) {
        if (fields.some((f) => f.number === e.number)) continue;
        const at = e.goAfter === undefined ? -1 : fields.findIndex((f) => f.name === e.goAfter);
        fields = at < 0 ? [...fields, e] : [...fields.slice(0, at + 1), e, ...fields.slice(at + 1)];
      }
    }
    byName.set(m.name, { ...m, fields });
  }
  for (const [pkg, kinds] of Object.entries(servedKinds)) {
    const gv = packageGroupVersions[pkg];
    if (!gv) continue;
    for (const kind of kinds) {
      for (const k of [kind, `${kind}List`]) {
        const name = `${pkg}.${k}`;
        if (!byName.has(name) || byGvk.has(gvkKey(gv.group, gv.version, k))) continue;
        const gvk = { group: gv.group, version: gv.version, kind: k };
        byGvk.set(gvkKey(gv.group, gv.version, k), byName.get(name)!);
        const list = gvkByMessage.get(name) ?? [];
        list.push(gvk);
        gvkByMessage.set(name, list);
      }
    }
  }
  // Unversioned meta kinds are served as apiVersion "v1" too (Status, APIVersions ...).
  for (const kind of metaKindsInEveryGroupVersion) {
    const m = byName.get(`${META_PACKAGE}.${kind}`);
    if (m && !byGvk.has(gvkKey('', 'v1', kind))) {
      byGvk.set(gvkKey('', 'v1', kind), m);
      gvkByMessage.get(m.name)?.push({ group: '', version: 'v1', kind });
    }
  }
  for (const [name, gvks] of gvkByMessage) {
    const m = byName.get(name)!;
    const kind = gvks[0].kind;
    const base = kind.endsWith('List') ? kind.slice(0, -4) : kind;
    const description = m.description ?? (kindDescriptions[kind] ??
      (kind !== base && kindDescriptions[base] ? `A list of ${base} objects.` : undefined));
    byName.set(name, description ? { ...m, gvk: gvks, description } : { ...m, gvk: gvks });
  }
  for (const [key, m] of byGvk) byGvk.set(key, byName.get(m.name)!);
  return { byName, byGvk, gvkByMessage };
}

function idx(): Index {
  index ??= build();
  return index;
}

export const schema: SchemaRegistry = {
  message(name: string): MessageDecl | undefined {
    return idx().byName.get(name);
  },
  forKind(group: string, version: string, kind: string): MessageDecl | undefined {
    const i = idx();
    const m = i.byGvk.get(gvkKey(group, version, kind));
    if (m) return m;
    // Kubernetes registers the meta/v1 option and status kinds in every group version.
    if (metaKindsInEveryGroupVersion.includes(kind)) return i.byName.get(`${META_PACKAGE}.${kind}`);
    // meta.k8s.io/v1beta1 Table and PartialObjectMetadata(List) have the v1 shape.
    if (group === 'meta.k8s.io' && version === 'v1beta1') return i.byGvk.get(gvkKey(group, 'v1', kind));
    return undefined;
  },
  all(): Iterable<MessageDecl> {
    return idx().byName.values();
  },
};

/** The message for a kind, e.g. kindMessage('apps', 'v1', 'Deployment'). */
export function kindMessage(group: string, version: string, kind: string): MessageDecl | undefined {
  return schema.forKind(group, version, kind);
}

/** Splits an apiVersion ("apps/v1", "v1") into group and version. */
export function parseApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/** Found messages by apiVersion, then kind (only hits: the keys come from request bodies). */
const byApiVersion = new Map<string, Map<string, MessageDecl>>();

/** The message for an object's apiVersion and kind. */
export function messageForObject(apiVersion: string, kind: string): MessageDecl | undefined {
  const hit = byApiVersion.get(apiVersion)?.get(kind);
  if (hit) return hit;
  const { group, version } = parseApiVersion(apiVersion);
  const m = schema.forKind(group, version, kind);
  if (m) {
    let perVersion = byApiVersion.get(apiVersion);
    if (!perVersion) byApiVersion.set(apiVersion, perVersion = new Map());
    perVersion.set(kind, m);
  }
  return m;
}

function resolve(m: MessageDecl | string): MessageDecl | undefined {
  return typeof m === 'string' ? schema.message(m) : m;
}

const jsonFieldCache = new Map<string, ReadonlyMap<string, JsonField>>();

/** Every field visible in the message's JSON object, inline members flattened, by JSON name. */
export function jsonFields(msg: MessageDecl | string): ReadonlyMap<string, JsonField> {
  const m = resolve(msg);
  if (!m) return new Map();
  const cached = jsonFieldCache.get(m.name);
  if (cached) return cached;
  const out = new Map<string, JsonField>();
  const add = (decl: MessageDecl, via: readonly FieldDecl[]): void => {
    for (const f of decl.fields) {
      if (f.inline && 'message' in f.type) {
        const inner = schema.message(f.type.message);
        if (inner) { add(inner, [...via, f]); continue; }
      }
      if (!out.has(f.name)) out.set(f.name, { field: f, via });
    }
  };
  add(m, []);
  jsonFieldCache.set(m.name, out);
  return out;
}

/** The declaration of a JSON field of a message, looking through inline members. */
export function fieldOf(msg: MessageDecl | string, jsonName: string): FieldDecl | undefined {
  return jsonFields(msg).get(jsonName)?.field;
}

/** The special JSON form of a message type, if it has one. */
export function specialOf(messageName: string): SpecialType | undefined {
  return SPECIAL_MESSAGES[messageName];
}

const listWrappers = new Set(listWrapperMessages);

/** True for messages whose JSON form is a plain array (meta.v1 Verbs, ExtraValue). */
export function isListWrapper(messageName: string): boolean {
  return listWrappers.has(messageName);
}

/** The group/version/kinds a message is served as (empty for nested types). */
export function gvksOf(messageName: string): readonly { group: string; version: string; kind: string }[] {
  return idx().gvkByMessage.get(messageName) ?? [];
}
