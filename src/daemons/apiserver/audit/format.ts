/**
 * The two log formats: json (one Event per line) and legacy (Kubernetes' EventString, one text
 * line per event). Also the backend contract every audit backend implements.
 */
import type { AuditEvent, AuditUser, ObjectReference, ResponseStatus } from './event.js';

export interface AuditBackend {
  /** 'log', 'webhook' or 'buffered' (the metric label and log name, as Kubernetes'). */
  readonly name: string;
  /** Blocking backends finish their work before the promise settles; batch ones return at once. */
  process(events: AuditEvent[]): void | Promise<void>;
  /** Writes out what is buffered, then stops. */
  shutdown(): Promise<void>;
  /**
   * What batch mode keeps of an event instead of the event itself, and how such a batch is
   * written (the log keeps its line, encoded while the event's objects are fresh).
   */
  prepare?(ev: AuditEvent): unknown;
  /** prepare for a json line (processLine's), in batch mode; `ascii`: see processLine. */
  prepareLine?(line: string, ascii: boolean): unknown;
  processPrepared?(items: unknown[]): void | Promise<void>;
  /**
   * One event as its json log line (AuditRecord.line), for backends that write such lines:
   * the audit filter then builds no Event object for them. `ascii`: the line is known to hold
   * only ASCII characters (its bytes are then copied, not UTF-8 encoded).
   */
  readonly processLine?: ((line: string, ascii: boolean) => void | Promise<void>) | undefined;
}

/** Go's %q for the strings audit carries (JSON's quoting agrees for printable text). */
function q(s: string): string {
  return JSON.stringify(s);
}

function quotedList(list: string[]): string {
  return list.map(q).join(',');
}

/** Go's RFC3339Nano of a MicroTime: trailing zeros of the fraction dropped. */
function rfc3339Nano(micro: string): string {
  return micro.replace(/\.(\d*?)0+Z$/, (_m, d: string) => (d ? `.${d}Z` : 'Z'));
}

export function legacyLine(ev: AuditEvent): string {
  let username = '<none>';
  let groups = '<none>';
  if (ev.user.username) {
    username = ev.user.username;
    if (ev.user.groups?.length) groups = quotedList(ev.user.groups);
  }
  let as = '<self>';
  let asGroups = '<lookup>';
  if (ev.impersonatedUser) {
    as = ev.impersonatedUser.username;
    if (ev.impersonatedUser.groups) asGroups = quotedList(ev.impersonatedUser.groups);
  }
  const namespace = ev.objectRef?.namespace || '<none>';
  const response = ev.responseStatus ? String(ev.responseStatus.code) : '<deferred>';
  const ip = ev.sourceIPs?.[0] ?? '<unknown>';
  return `${rfc3339Nano(ev.requestReceivedTimestamp)} AUDIT: id=${q(ev.auditID)} stage=${q(ev.stage)} ip=${q(ip)} method=${q(ev.verb)} user=${q(username)} groups=${q(groups)} as=${q(as)} asgroups=${q(asGroups)} user-agent=${q(ev.userAgent ?? '')} namespace=${q(namespace)} uri=${q(ev.requestURI)} response="${response}"`;
}

export type LogFormat = 'json' | 'legacy';

/**
 * Parts two stages of one request share (user, source IPs, object reference, status,
 * annotations), encoded once: the record hands the same objects to both events.
 */
const ENCODED = Symbol('audit.encoded');

/** JSON of `o`, kept on it under a symbol (JSON.stringify and the webhook's EventList never see it). */
function cached(o: object): string {
  if (Object.isFrozen(o)) return noteText(JSON.stringify(o));
  const c = o as { [ENCODED]?: string };
  return noteText(c[ENCODED] ??= JSON.stringify(o));
}

/**
 * Whether every JSON text the functions here gave since asciiStart() is ASCII: the log then
 * copies a line's bytes instead of encoding them (AuditRecord.lineAscii). Texts kept by value
 * remember whether they are; a plain string is by its test in quote().
 */
let allAscii = true;
export function asciiStart(): void { allAscii = true; }
export function asciiSoFar(): boolean { return allAscii; }

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** `s`, noted as non-ASCII when it is. */
function noteText(s: string): string {
  if (allAscii && !isAscii(s)) allAscii = false;
  return s;
}

/** A kept text and whether it is ASCII. */
interface Text { readonly json: string; readonly ascii: boolean }

function textOf(json: string): Text {
  return { json, ascii: isAscii(json) };
}

/** A kept text's JSON, noted. */
function kept(t: Text): string {
  if (!t.ascii) allAscii = false;
  return t.json;
}

/**
 * The same few values recur from request to request (the caller, its address, 200, the
 * authorizer's answer): their JSON is kept by value, so most events serialize none of them.
 * Looked up through a trie of the values themselves (maps of maps), so a lookup builds no key
 * string (a key string made per request is hashed, and compared, every time).
 */
const MAX_REMEMBERED = 1000;
/** Longest path remembered (a user with many groups, many annotations: encoded each time). */
const MAX_PATH = 16;
class Trie {
  private readonly root = new Map<string, TrieNode>();
  private size = 0;
  /** The node for a path's first part (all remembered values are forgotten once there are too many). */
  first(part: string): TrieNode {
    if (this.size >= MAX_REMEMBERED) { this.root.clear(); this.size = 0; }
    return this.child(this.root, part);
  }

  /** The node one part further along. */
  next(node: TrieNode, part: string): TrieNode {
    return this.child(node.next, part);
  }

  private child(level: Map<string, TrieNode>, part: string): TrieNode {
    let node = level.get(part);
    if (!node) { level.set(part, node = { next: new Map(), text: undefined }); this.size++; }
    return node;
  }
}
interface TrieNode { next: Map<string, TrieNode>; text: Text | undefined }

const users = new Trie();
const statuses = new Map<number, Text>();
const annotationSets = new Trie();
const addresses = new Map<string, Text>();

/** Identity caches for frozen objects (an authenticated connection's user is one shared frozen object). */
const frozenUsers = new WeakMap<AuditUser, Text>();

/** Printable ASCII but the quote and the backslash: characters JSON.stringify leaves alone. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/**
 * JSON of a string: a plain one (PLAIN, so also ASCII) quoted at once, cheaper than a call into
 * JSON.stringify (and than testing it by a loop over its characters, measured).
 */
export function quote(s: string): string {
  return PLAIN.test(s) ? `"${s}"` : noteText(JSON.stringify(s));
}
const str = quote;

export function userJson(u: AuditUser): string {
  if (u.username === undefined) return '{}';
  const frozen = Object.isFrozen(u);
  if (frozen) { const known = frozenUsers.get(u); if (known !== undefined) return kept(known); }
  let text: Text;
  if (u.uid !== undefined || u.extra || (u.groups && u.groups.length >= MAX_PATH)) text = textOf(JSON.stringify(u));
  else {
    // The name, then a marker for "groups follow" (a name and its groups never read as another user's).
    let node = users.first(u.username);
    if (u.groups) { node = users.next(node, '\u0000groups'); for (const g of u.groups) node = users.next(node, g); }
    text = (node.text ??= textOf(JSON.stringify(u)));
  }
  if (frozen) frozenUsers.set(u, text);
  return kept(text);
}

export function statusJson(st: ResponseStatus): string {
  if (st.status !== undefined || st.message !== undefined || st.reason !== undefined || st.details !== undefined) return cached(st);
  let t = statuses.get(st.code);
  if (t === undefined) statuses.set(st.code, t = textOf(JSON.stringify(st)));
  return kept(t);
}

export function annotationsJson(a: Record<string, string>): string {
  let node: TrieNode | undefined;
  let parts = 0;
  for (const k in a) {
    if ((parts += 2) > MAX_PATH) return noteText(JSON.stringify(a));
    node = node === undefined ? annotationSets.next(annotationSets.first(k), a[k]!) : annotationSets.next(annotationSets.next(node, k), a[k]!);
  }
  return node ? kept(node.text ??= textOf(JSON.stringify(a))) : noteText(JSON.stringify(a));
}

export function addressesJson(ips: string[]): string {
  if (ips.length !== 1) return noteText(JSON.stringify(ips));
  let t = addresses.get(ips[0]!);
  if (t === undefined) {
    if (addresses.size >= MAX_REMEMBERED) addresses.clear();
    addresses.set(ips[0]!, t = textOf(JSON.stringify(ips)));
  }
  return kept(t);
}

const refPrefixes = new Trie();
const refSuffixes = new Trie();

/** JSON.stringify of an object reference with Kubernetes' field order and its empty fields left out. */
export function objectRefJson(r: ObjectReference): string {
  // The usual reference: resource and namespace, a name, the group and version (and subresource),
  // each side of the name kept by value.
  if (!r.uid && !r.resourceVersion && r.resource) {
    const pre = refPrefixes.next(refPrefixes.first(r.resource), r.namespace ?? '');
    const post = refSuffixes.next(refSuffixes.next(refSuffixes.first(r.apiGroup ?? ''), r.apiVersion ?? ''), r.subresource ?? '');
    const before = kept(pre.text ??= textOf(`{"resource":${JSON.stringify(r.resource)}${r.namespace ? `,"namespace":${JSON.stringify(r.namespace)}` : ''}`));
    const after = kept(post.text ??= textOf(`${r.apiGroup ? `,"apiGroup":${JSON.stringify(r.apiGroup)}` : ''}${r.apiVersion ? `,"apiVersion":${JSON.stringify(r.apiVersion)}` : ''}${r.subresource ? `,"subresource":${JSON.stringify(r.subresource)}` : ''}}`));
    return r.name ? `${before},"name":${str(r.name)}${after}` : before + after;
  }
  let s = '';
  if (r.resource) s += `,"resource":${str(r.resource)}`;
  if (r.namespace) s += `,"namespace":${str(r.namespace)}`;
  if (r.name) s += `,"name":${str(r.name)}`;
  if (r.uid) s += `,"uid":${str(r.uid)}`;
  if (r.apiGroup) s += `,"apiGroup":${str(r.apiGroup)}`;
  if (r.apiVersion) s += `,"apiVersion":${str(r.apiVersion)}`;
  if (r.resourceVersion) s += `,"resourceVersion":${str(r.resourceVersion)}`;
  if (r.subresource) s += `,"subresource":${str(r.subresource)}`;
  return s ? `{${s.slice(1)}}` : '{}';
}

/** JSON.stringify(ev) for an Event, field by field (the same bytes, a fraction of the time). */
export function encodeEvent(ev: AuditEvent): string {
  let s = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"${ev.level}","auditID":${str(ev.auditID)},"stage":"${ev.stage}","requestURI":${str(ev.requestURI)},"verb":${str(ev.verb)},"user":${userJson(ev.user)}`;
  if (ev.impersonatedUser) s += `,"impersonatedUser":${userJson(ev.impersonatedUser)}`;
  if (ev.sourceIPs) s += `,"sourceIPs":${addressesJson(ev.sourceIPs)}`;
  if (ev.userAgent !== undefined) s += `,"userAgent":${str(ev.userAgent)}`;
  if (ev.objectRef) s += `,"objectRef":${cached(ev.objectRef)}`;
  if (ev.responseStatus) s += `,"responseStatus":${statusJson(ev.responseStatus)}`;
  if (ev.requestObject !== undefined) s += `,"requestObject":${JSON.stringify(ev.requestObject)}`;
  if (ev.responseObject !== undefined) s += `,"responseObject":${JSON.stringify(ev.responseObject)}`;
  s += `,"requestReceivedTimestamp":"${ev.requestReceivedTimestamp}","stageTimestamp":"${ev.stageTimestamp}"`;
  if (ev.annotations) s += `,"annotations":${annotationsJson(ev.annotations)}`;
  return `${s}}`;
}

export function formatLine(ev: AuditEvent, format: LogFormat): string {
  return (format === 'json' ? encodeEvent(ev) : legacyLine(ev)) + '\n';
}
