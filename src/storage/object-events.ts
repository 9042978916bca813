/**
 * Backend events → ObjectEvents as each watcher sees them (type by the watcher's filter:
 * MODIFIED entering or leaving the filter becomes ADDED or DELETED), built once per backend
 * event and shared by every watcher that gets the same one: decoded objects and event objects
 * (with their serialization cache) are kept per backend event in a bounded SharedEventCache.
 * Consumers must treat them as read-only.
 */
import type { KubeObject } from '../api/resources/types.js';
import type { WatchEvent } from './interface.js';
import type { ObjectEvent, ObjectEventType } from './object-store-types.js';
import type { ResourceStore } from './resource-store.js';

interface Shared {
  cur?: Promise<KubeObject>;
  prev?: Promise<KubeObject>;
  /** Decoded synchronously (stores without an at-rest transformer). */
  curObj?: KubeObject;
  prevObj?: KubeObject;
  readonly events: Map<ObjectEventType, ObjectEvent>;
}

/** Decoded events by backend event identity, bounded (recent events are the ones watchers share). */
export class SharedEventCache {
  private readonly map = new Map<WatchEvent, Shared>();
  /** The last event asked for: a fan-out asks for the same event once per watcher in a row. */
  private lastEvent: WatchEvent | undefined;
  private lastShared: Shared | undefined;
  constructor(private readonly capacity = 8192) {}

  entry(e: WatchEvent): Shared {
    if (e === this.lastEvent) return this.lastShared!;
    let s = this.map.get(e);
    if (!s) {
      s = { events: new Map() };
      this.map.set(e, s);
      if (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value!);
    }
    this.lastEvent = e;
    this.lastShared = s;
    return s;
  }
}

/** The event type a change has for a watcher without a filter. */
function plainType(e: WatchEvent): ObjectEventType {
  if (e.type === 'DELETE') return 'DELETED';
  return e.prevKv || e.kv.version > 1 ? 'MODIFIED' : 'ADDED';
}

/**
 * The ObjectEvent for one backend event as one watcher sees it, or undefined when the watcher's
 * filter drops it. Synchronous when values decode without a promise (no at-rest transformer)
 * or another watcher already built the same event (the common fan-out case), so delivery to
 * many watchers costs no decoding and no extra awaits.
 */
export function convert(rs: ResourceStore, e: WatchEvent, matches: ((o: KubeObject) => boolean) | undefined,
  shared: SharedEventCache): ObjectEvent | undefined | Promise<ObjectEvent | undefined> {
  if (rs.canDecodeSync) return convertSync(rs, e, matches, shared);
  const s = shared.entry(e);
  if (!matches) {
    if (e.type === 'DELETE' && !e.prevKv) return undefined; // backends always send prevKv on delete
    const type = plainType(e);
    return s.events.get(type) ?? build(rs, e, s, type);
  }
  return convertFiltered(rs, e, matches, s);
}

/** convert() for stores whose values decode synchronously (rs.canDecodeSync). */
export function convertSync(rs: ResourceStore, e: WatchEvent, matches: ((o: KubeObject) => boolean) | undefined,
  shared: SharedEventCache): ObjectEvent | undefined {
  const s = shared.entry(e);
  let type: ObjectEventType | undefined;
  if (!matches) {
    if (e.type === 'DELETE' && !e.prevKv) return undefined;
    type = plainType(e);
  } else if (e.type === 'DELETE') {
    if (!e.prevKv || !matches(prevSync(rs, e, s))) return undefined;
    type = 'DELETED';
  } else {
    const curPasses = matches(curSync(rs, e, s));
    const prevPasses = e.prevKv ? matches(prevSync(rs, e, s)) : false;
    if (!e.prevKv) type = curPasses ? plainType(e) : undefined;
    else if (curPasses) type = prevPasses ? 'MODIFIED' : 'ADDED';
    else if (prevPasses) type = 'DELETED';
  }
  if (!type) return undefined;
  const had = s.events.get(type);
  if (had) return had;
  let ev: ObjectEvent;
  if (type === 'DELETED') {
    const p = prevSync(rs, e, s);
    ev = { type, object: { ...p, metadata: { ...p.metadata, resourceVersion: String(e.kv.modRevision) } }, prevObject: p, cache: new Map() };
  } else if (type === 'MODIFIED') {
    // The previous object is decoded only if someone asks (no consumer does on the hot path).
    ev = { type, object: curSync(rs, e, s), get prevObject() { return e.prevKv ? prevSync(rs, e, s) : undefined; }, cache: new Map() };
  } else {
    ev = { type, object: curSync(rs, e, s), cache: new Map() };
  }
  s.events.set(type, ev);
  return ev;
}

/**
 * `valueOf` of the event's object after the change and of the one before (undefined where
 * there is none), decoded once per event like convertSync's (stores with rs.canDecodeSync).
 */
export function eventValuesSync(rs: ResourceStore, e: WatchEvent, shared: SharedEventCache,
  valueOf: (o: KubeObject) => string | undefined): (string | undefined)[] {
  const s = shared.entry(e);
  return [e.type === 'DELETE' ? undefined : valueOf(curSync(rs, e, s)), e.prevKv ? valueOf(prevSync(rs, e, s)) : undefined];
}

function curSync(rs: ResourceStore, e: WatchEvent, s: Shared): KubeObject {
  return (s.curObj ??= rs.decodeSync(e.kv));
}

function prevSync(rs: ResourceStore, e: WatchEvent, s: Shared): KubeObject {
  return (s.prevObj ??= rs.decodeSync(e.prevKv!));
}

async function convertFiltered(rs: ResourceStore, e: WatchEvent, matches: (o: KubeObject) => boolean, s: Shared): Promise<ObjectEvent | undefined> {
  if (e.type === 'DELETE') {
    if (!e.prevKv || !matches(await prevOf(rs, e, s))) return undefined;
    return s.events.get('DELETED') ?? build(rs, e, s, 'DELETED');
  }
  const curPasses = matches(await curOf(rs, e, s));
  const prevPasses = e.prevKv ? matches(await prevOf(rs, e, s)) : false;
  let type: ObjectEventType | undefined;
  if (!e.prevKv) type = curPasses ? plainType(e) : undefined;
  else if (curPasses) type = prevPasses ? 'MODIFIED' : 'ADDED';
  else if (prevPasses) type = 'DELETED';
  if (!type) return undefined;
  return s.events.get(type) ?? build(rs, e, s, type);
}

function curOf(rs: ResourceStore, e: WatchEvent, s: Shared): Promise<KubeObject> {
  return (s.cur ??= rs.decode(e.kv));
}

function prevOf(rs: ResourceStore, e: WatchEvent, s: Shared): Promise<KubeObject> {
  return (s.prev ??= rs.decode(e.prevKv!));
}

async function build(rs: ResourceStore, e: WatchEvent, s: Shared, type: ObjectEventType): Promise<ObjectEvent> {
  let ev: ObjectEvent;
  if (type === 'DELETED') {
    // The last state, stamped with the revision of the change that removed it.
    const p = await prevOf(rs, e, s);
    const object = { ...p, metadata: { ...p.metadata, resourceVersion: String(e.kv.modRevision) } };
    ev = { type, object, prevObject: p, cache: new Map() };
  } else if (type === 'MODIFIED') {
    ev = { type, object: await curOf(rs, e, s), prevObject: e.prevKv ? await prevOf(rs, e, s) : undefined, cache: new Map() };
  } else {
    ev = { type, object: await curOf(rs, e, s), cache: new Map() };
  }
  const raced = s.events.get(type); // another watcher built it while we awaited
  if (raced) return raced;
  s.events.set(type, ev);
  return ev;
}
