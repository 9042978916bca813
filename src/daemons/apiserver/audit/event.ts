/**
 * audit.k8s.io/v1 Event, and the per-request record that fills it (Kubernetes' audit context:
 * request.go). The record lives on the request context (`ctx.audit`) only when the policy gave
 * the request a level above None; handlers and filters add to it through that field:
 * the authorization filter its decision and reason, the REST layer the decoded object's name.
 *
 * Fields are assigned in Kubernetes' order so `JSON.stringify` writes them as its encoder does.
 */
import { decodeBody, mediaTypeOf } from '../../../api/codec/body.js';
import { microTime } from '../../../api/meta/time.js';
import type { ApiRequest } from '../context.js';
import type { UserInfo } from '../../../auth/user.js';
import { verbForMethod, type RequestInfo } from '../request-info.js';
import { addressesJson, annotationsJson, asciiSoFar, asciiStart, objectRefJson, quote, statusJson, userJson } from './format.js';
import { levelAtLeast, type AuditDecision, type Level, type Stage } from './policy.js';

export interface AuditUser { username: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> }

export interface ObjectReference {
  resource?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  apiGroup?: string;
  apiVersion?: string;
  resourceVersion?: string;
  subresource?: string;
}

export interface ResponseStatus {
  metadata: Record<string, never>;
  status?: string;
  message?: string;
  reason?: string;
  details?: unknown;
  code: number;
}

export interface AuditEvent {
  kind: 'Event';
  apiVersion: 'audit.k8s.io/v1';
  level: Level;
  auditID: string;
  stage: Stage;
  requestURI: string;
  verb: string;
  user: AuditUser;
  impersonatedUser?: AuditUser;
  sourceIPs?: string[];
  userAgent?: string;
  objectRef?: ObjectReference;
  responseStatus?: ResponseStatus;
  requestObject?: unknown;
  responseObject?: unknown;
  requestReceivedTimestamp: string;
  stageTimestamp: string;
  annotations?: Record<string, string>;
}

/**
 * Requests whose body audit logs (Request level and above): readBody hands the bytes over
 * through this map, so other requests pay one lookup and no copy.
 */
export const auditBodies = new WeakMap<object, AuditRecord>();


/** A frozen user (one authenticated connection's, shared by its requests) has one frozen audit user. */
const frozenAuditUsers = new WeakMap<UserInfo, AuditUser>();

export function auditUser(u: UserInfo): AuditUser {
  // No user (a refused authentication): Kubernetes writes an empty object.
  if (!u.name) return {} as AuditUser;
  if (Object.isFrozen(u)) {
    let known = frozenAuditUsers.get(u);
    if (!known) {
      known = makeAuditUser(u);
      if (known.groups) Object.freeze(known.groups);
      frozenAuditUsers.set(u, known = Object.freeze(known));
    }
    return known;
  }
  return makeAuditUser(u);
}

function makeAuditUser(u: UserInfo): AuditUser {
  const out: AuditUser = { username: u.name };
  if (u.uid) out.uid = u.uid;
  if (u.groups.length) out.groups = [...u.groups];
  if (u.extra && Object.keys(u.extra).length) out.extra = u.extra;
  return out;
}

/** The verb audit reports: request info's, with streaming `connect` read back from the HTTP method as Kubernetes' request info does. */
export function auditVerb(info: RequestInfo, method: string | undefined): string {
  if (info.verb !== 'connect') return info.verb;
  return verbForMethod(method ?? 'GET') || 'get';
}

/** X-Forwarded-For, then X-Real-Ip, then the peer address, without repeats (Kubernetes' SourceIPs). */
export function sourceIPs(req: ApiRequest): string[] {
  const out: string[] = [];
  const xff = req.headers['x-forwarded-for'];
  if (typeof xff === 'string') for (const p of xff.split(',')) { const ip = p.trim(); if (ip) out.push(ip); }
  const real = req.headers['x-real-ip'];
  if (typeof real === 'string' && real.trim() && !out.includes(real.trim())) out.push(real.trim());
  let remote = req.socket?.remoteAddress;
  if (remote?.startsWith('::ffff:')) remote = remote.slice(7);
  if (remote && !out.includes(remote)) out.push(remote);
  return out;
}

/** A copy with Kubernetes' field order and its omitted empties. */
function orderedRef(r: ObjectReference): ObjectReference {
  const ref: ObjectReference = {};
  if (r.resource) ref.resource = r.resource;
  if (r.namespace) ref.namespace = r.namespace;
  if (r.name) ref.name = r.name;
  if (r.uid) ref.uid = r.uid;
  if (r.apiGroup) ref.apiGroup = r.apiGroup;
  if (r.apiVersion) ref.apiVersion = r.apiVersion;
  if (r.resourceVersion) ref.resourceVersion = r.resourceVersion;
  if (r.subresource) ref.subresource = r.subresource;
  return ref;
}

function objectRefOf(info: RequestInfo): ObjectReference | undefined {
  if (!info.isResourceRequest) return undefined;
  const ref: ObjectReference = {};
  if (info.resource) ref.resource = info.resource;
  if (info.namespace) ref.namespace = info.namespace;
  if (info.name) ref.name = info.name;
  ref.apiGroup = info.apiGroup;
  if (info.apiVersion) ref.apiVersion = info.apiVersion;
  if (info.subresource) ref.subresource = info.subresource;
  return ref;
}

/** Drops metadata.managedFields (of a List's items too) from a copy-free parsed object. */
export function omitManagedFields(obj: unknown): unknown {
  if (typeof obj !== 'object' || obj === null) return obj;
  const o = obj as { metadata?: { managedFields?: unknown }; items?: unknown[] };
  if (o.metadata && typeof o.metadata === 'object') delete o.metadata.managedFields;
  if (Array.isArray(o.items)) for (const i of o.items) omitManagedFields(i);
  return obj;
}

/**
 * A request or response body as the object it carries, whatever its encoding (JSON, YAML,
 * protobuf), as Kubernetes logs the decoded object; undefined for an empty body or one that
 * does not decode (the handler's own answer says what was wrong with it).
 */
export function decodeAuditBody(body: Buffer | undefined, contentType: string | undefined): unknown {
  if (!body || body.length === 0) return undefined;
  const ct = mediaTypeOf(contentType);
  try {
    // JSON (nearly every body, and every patch but apply's YAML) straight; the rest as the REST layer decodes them.
    if (ct === '' || ct.endsWith('json')) return JSON.parse(body.toString('utf8'));
    return decodeBody(ct, body);
  } catch {
    return undefined;
  }
}

/** The responseStatus of a bare code, one shared object per code (encoders cache its JSON). */
const codeStatuses = new Map<number, ResponseStatus>();
export function statusOfCode(code: number): ResponseStatus {
  let st = codeStatuses.get(code);
  if (!st) codeStatuses.set(code, st = Object.freeze({ metadata: Object.freeze({}) as Record<string, never>, code }) as ResponseStatus);
  return st;
}

/** The peer address as audit shows it (no IPv4-mapped prefix). */
function peerAddress(req: ApiRequest): string | undefined {
  const remote = req.socket?.remoteAddress;
  return remote?.startsWith('::ffff:') ? remote.slice(7) : remote;
}

/** sourceIPs of a connection without proxy headers: one frozen list per socket (an HTTP/2 session's requests share it). */
const peerLists = new WeakMap<object, string[]>();
function peerList(req: ApiRequest): string[] {
  const sock = req.socket as object | undefined;
  let list = sock ? peerLists.get(sock) : undefined;
  if (!list) {
    const peer = peerAddress(req);
    list = Object.freeze(peer ? [peer] : []) as string[];
    // An address is known once connected; until then nothing is kept.
    if (sock && peer) peerLists.set(sock, list);
  }
  return list;
}

/** One request's audit state. */
export class AuditRecord {
  readonly level: Level;
  readonly receivedAt: number;
  readonly user: AuditUser;
  readonly objectRef: ObjectReference | undefined;
  readonly requestURI: string;
  readonly verb: string;
  readonly sourceIPs: string[];
  readonly userAgent: string | undefined;
  readonly requestReceivedTimestamp: string;
  annotations: Record<string, string> | undefined;
  /** Set once the answer is known. */
  responseStatus: ResponseStatus | undefined;
  /** The raw request body, kept only at Request level and above (readBody hands it over). */
  requestBody: Buffer | undefined;
  /** The response body bytes, kept only at RequestResponse for requests that are not long-running. */
  responseBody: Buffer[] | undefined;
  /** What the events carry, shared by the stages until it changes (so encoders can cache by identity). */
  private refOut: ObjectReference | undefined;
  /** The JSON line's start up to `"stage":"`, and its part from requestURI to objectRef (for `midFor`), made once. */
  private head: string | undefined;
  private mid: string | undefined;
  private midFor: UserInfo | undefined;
  private midAscii = false;
  private headAscii = false;
  /** Whether the last line() holds only ASCII characters (the log copies its bytes then). */
  lineAscii = false;

  constructor(readonly decision: AuditDecision, readonly id: string, req: ApiRequest, info: RequestInfo, originalUser: UserInfo) {
    this.level = decision.level;
    this.receivedAt = Date.now();
    this.user = auditUser(originalUser);
    this.objectRef = objectRefOf(info);
    this.requestURI = req.url ?? '/';
    this.verb = auditVerb(info, req.method);
    const h = req.headers;
    // Nearly every request: no proxy headers, the peer alone.
    this.sourceIPs = h['x-forwarded-for'] === undefined && h['x-real-ip'] === undefined ? peerList(req) : sourceIPs(req);
    const ua = h['user-agent'];
    this.userAgent = ua ? ua : undefined;
    this.requestReceivedTimestamp = microTime(this.receivedAt);
  }

  get wantsRequestBody(): boolean { return levelAtLeast(this.level, 'Request'); }
  get wantsResponseBody(): boolean { return this.level === 'RequestResponse'; }

  annotate(key: string, value: string): void {
    (this.annotations ??= {})[key] = value;
  }

  /** The annotations, for others to add to (admission plugins' audit annotations). */
  annotationSink(): Record<string, string> {
    return (this.annotations ??= {});
  }

  /** The Status an answered failure carried (the REST layer writes its own errors). */
  noteStatus(s: { status?: string; message?: string; reason?: string; details?: unknown; code: number }): void {
    if (!s.status && !s.message && !s.reason && !s.details) { this.responseStatus = statusOfCode(s.code); return; }
    // Kubernetes' field order: metadata, status, message, reason, details, code.
    const out = { metadata: {} } as ResponseStatus;
    if (s.status) out.status = s.status;
    if (s.message) out.message = s.message;
    if (s.reason) out.reason = s.reason;
    if (s.details) out.details = s.details;
    out.code = s.code;
    this.responseStatus = out;
  }

  /** Fills the object reference from a decoded request object's metadata, where the URL did not say (create). */
  noteObject(meta: { namespace?: unknown; name?: unknown; uid?: unknown; resourceVersion?: unknown } | undefined): void {
    const ref = this.objectRef;
    if (!ref || !meta) return;
    this.refOut = undefined;
    this.mid = undefined;
    if (!ref.namespace && typeof meta.namespace === 'string' && meta.namespace) ref.namespace = meta.namespace;
    if (!ref.name && typeof meta.name === 'string' && meta.name) ref.name = meta.name;
    if (!ref.uid && typeof meta.uid === 'string' && meta.uid) ref.uid = meta.uid;
    if (!ref.resourceVersion && typeof meta.resourceVersion === 'string' && meta.resourceVersion) ref.resourceVersion = meta.resourceVersion;
  }

  private requestObject(reqContentType: string | undefined): unknown {
    if (!this.requestBody || !this.wantsRequestBody) return undefined;
    const o = decodeAuditBody(this.requestBody, reqContentType);
    return o !== undefined && this.decision.omitManagedFields ? omitManagedFields(o) : o;
  }

  private responseObject(stage: Stage, resContentType: string | undefined): unknown {
    if (stage !== 'ResponseComplete' || !this.responseBody || !this.wantsResponseBody) return undefined;
    const o = decodeAuditBody(Buffer.concat(this.responseBody), resContentType);
    return o !== undefined && this.decision.omitManagedFields ? omitManagedFields(o) : o;
  }

  /** The event for one stage; `impersonated` is the user the request ran as, when not the authenticated one. */
  event(stage: Stage, impersonated: UserInfo | undefined, reqContentType: string | undefined, resContentType: string | undefined): AuditEvent {
    const ev: AuditEvent = {
      kind: 'Event', apiVersion: 'audit.k8s.io/v1', level: this.level, auditID: this.id, stage, requestURI: this.requestURI, verb: this.verb, user: this.user,
    } as AuditEvent;
    if (impersonated) ev.impersonatedUser = auditUser(impersonated);
    if (this.sourceIPs.length) ev.sourceIPs = this.sourceIPs;
    if (this.userAgent) ev.userAgent = this.userAgent;
    if (this.objectRef) ev.objectRef = (this.refOut ??= orderedRef(this.objectRef));
    if (stage !== 'RequestReceived' && this.responseStatus) ev.responseStatus = this.responseStatus;
    const reqObj = this.requestObject(reqContentType);
    if (reqObj !== undefined) ev.requestObject = reqObj;
    const resObj = this.responseObject(stage, resContentType);
    if (resObj !== undefined) ev.responseObject = resObj;
    ev.requestReceivedTimestamp = this.requestReceivedTimestamp;
    ev.stageTimestamp = this.stageTimestamp(stage);
    // A copy: a batch may encode this event after later stages added annotations.
    if (this.annotations && stage !== 'RequestReceived') ev.annotations = { ...this.annotations };
    return ev;
  }

  /** As Kubernetes: RequestReceived's stage time is the time the request was received; later stages', now. */
  private stageTimestamp(stage: Stage): string {
    return stage === 'RequestReceived' ? this.requestReceivedTimestamp : microTime(Date.now());
  }

  /**
   * The json log line of one stage (newline included): the same bytes as encoding `event()`,
   * written straight from the record. The parts every stage shares are made once per request.
   */
  line(stage: Stage, impersonated: UserInfo | undefined, reqContentType: string | undefined, resContentType: string | undefined): string {
    if (this.head === undefined) {
      asciiStart();
      this.head = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"${this.level}","auditID":${quote(this.id)},"stage":"`;
      this.headAscii = asciiSoFar();
    }
    let s = this.head + stage;
    if (this.mid === undefined || this.midFor !== impersonated) {
      asciiStart();
      let m = `","requestURI":${quote(this.requestURI)},"verb":${quote(this.verb)},"user":${userJson(this.user)}`;
      if (impersonated) m += `,"impersonatedUser":${userJson(auditUser(impersonated))}`;
      if (this.sourceIPs.length) m += `,"sourceIPs":${addressesJson(this.sourceIPs)}`;
      if (this.userAgent) m += `,"userAgent":${quote(this.userAgent)}`;
      if (this.objectRef) m += `,"objectRef":${objectRefJson(this.objectRef)}`;
      this.mid = m;
      this.midFor = impersonated;
      this.midAscii = asciiSoFar();
    }
    s += this.mid;
    asciiStart();
    let ascii = this.midAscii && this.headAscii;
    if (stage !== 'RequestReceived' && this.responseStatus) s += `,"responseStatus":${statusJson(this.responseStatus)}`;
    const reqObj = this.requestObject(reqContentType);
    if (reqObj !== undefined) { s += `,"requestObject":${JSON.stringify(reqObj)}`; ascii = false; }
    const resObj = this.responseObject(stage, resContentType);
    if (resObj !== undefined) { s += `,"responseObject":${JSON.stringify(resObj)}`; ascii = false; }
    s += `,"requestReceivedTimestamp":"${this.requestReceivedTimestamp}","stageTimestamp":"${this.stageTimestamp(stage)}"`;
    if (this.annotations && stage !== 'RequestReceived') s += `,"annotations":${annotationsJson(this.annotations)}`;
    this.lineAscii = ascii && asciiSoFar();
    return `${s}}\n`;
  }
}
