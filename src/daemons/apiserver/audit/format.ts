/**
 * The two log formats: json (one Event per line) and legacy (Kubernetes' EventString, one text
 * line per event). Also the backend contract every audit backend implements.
 */
import type { AuditEvent } from './event.js';

export interface AuditBackend {
  /** 'log', 'webhook' or 'buffered' (the metric label and log name, as Kubernetes'). */
  readonly name: string;
  /** Blocking backends finish their work before the promise settles; batch ones return at once. */
  process(events: AuditEvent[]): void | Promise<void>;
  /** Writes out what is buffered, then stops. */
  shutdown(): Promise<void>;
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
const str = JSON.stringify as (s: string) => string;

/** `enc(o)`, kept on `o` under a symbol (JSON.stringify and the webhook's EventList never see it). */
function cached(o: object): string {
  const c = o as { [ENCODED]?: string };
  return (c[ENCODED] ??= JSON.stringify(o));
}

/** JSON.stringify(ev) for an Event, field by field (the same bytes, a fraction of the time). */
export function encodeEvent(ev: AuditEvent): string {
  let s = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"${ev.level}","auditID":${str(ev.auditID)},"stage":"${ev.stage}","requestURI":${str(ev.requestURI)},"verb":${str(ev.verb)},"user":${cached(ev.user)}`;
  if (ev.impersonatedUser) s += `,"impersonatedUser":${cached(ev.impersonatedUser)}`;
  if (ev.sourceIPs) s += `,"sourceIPs":${cached(ev.sourceIPs)}`;
  if (ev.userAgent !== undefined) s += `,"userAgent":${str(ev.userAgent)}`;
  if (ev.objectRef) s += `,"objectRef":${cached(ev.objectRef)}`;
  if (ev.responseStatus) s += `,"responseStatus":${cached(ev.responseStatus)}`;
  if (ev.requestObject !== undefined) s += `,"requestObject":${JSON.stringify(ev.requestObject)}`;
  if (ev.responseObject !== undefined) s += `,"responseObject":${JSON.stringify(ev.responseObject)}`;
  s += `,"requestReceivedTimestamp":"${ev.requestReceivedTimestamp}","stageTimestamp":"${ev.stageTimestamp}"`;
  if (ev.annotations) s += `,"annotations":${cached(ev.annotations)}`;
  return `${s}}`;
}

export function formatLine(ev: AuditEvent, format: LogFormat): string {
  return (format === 'json' ? encodeEvent(ev) : legacyLine(ev)) + '\n';
}
