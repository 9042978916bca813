/** core/v1 Event: expires after --event-ttl; involvedObject field selectors for describe. */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { col, num, rec, str, path, since } from '../common/table-util.js';
import type { KubeObject } from '../types.js';

let eventTtlSeconds = 3600;
/** Set once at server start from --event-ttl. */
export function setEventTtlSeconds(s: number): void { eventTtlSeconds = Math.max(1, Math.round(s)); }
export function getEventTtlSeconds(): number { return eventTtlSeconds; }

function lastSeen(o: KubeObject, now: Date): string {
  const s = rec(o.series);
  const t = str(s.lastObservedTime) || str(o.lastTimestamp) || str(o.eventTime) || str(o.firstTimestamp) || str(o.metadata?.creationTimestamp);
  return since(t, now);
}

export const events = defineResource({
  group: '', versions: ['v1'], kind: 'Event', plural: 'events', namespaced: true,
  shortNames: ['ev'],
  validateSpec(obj) {
    const errs: FieldError[] = [];
    const io = rec(obj.involvedObject);
    const ns = obj.metadata?.namespace ?? '';
    if (io.namespace !== undefined && io.namespace !== '' && io.namespace !== ns && ns !== 'default') {
      errs.push(fieldErrors.invalid('involvedObject.namespace', io.namespace, 'does not match event.namespace'));
    }
    if (obj.type !== undefined && obj.type !== '' && !['Normal', 'Warning'].includes(String(obj.type))) errs.push(fieldErrors.notSupported('type', obj.type, ['Normal', 'Warning']));
    if (typeof obj.reason === 'string' && obj.reason.length > 128) errs.push(fieldErrors.tooLong('reason', 128));
    if (typeof obj.message === 'string' && obj.message.length > 4096) errs.push(fieldErrors.tooLong('message', 4096));
    return errs;
  },
  ttlSeconds: () => eventTtlSeconds,
  fieldSelectors: {
    'involvedObject.kind': (o) => str(path(o, 'involvedObject.kind')),
    'involvedObject.namespace': (o) => str(path(o, 'involvedObject.namespace')),
    'involvedObject.name': (o) => str(path(o, 'involvedObject.name')),
    'involvedObject.uid': (o) => str(path(o, 'involvedObject.uid')),
    'involvedObject.apiVersion': (o) => str(path(o, 'involvedObject.apiVersion')),
    'involvedObject.resourceVersion': (o) => str(path(o, 'involvedObject.resourceVersion')),
    'involvedObject.fieldPath': (o) => str(path(o, 'involvedObject.fieldPath')),
    reason: (o) => str(o.reason),
    reportingComponent: (o) => str(o.reportingComponent),
    source: (o) => str(path(o, 'source.component')) || str(o.reportingComponent),
    type: (o) => str(o.type),
  },
  tableColumnsIncludeName: true,
  noAge: true,
  columns: [
    col('Last Seen', 'string', 'Time when last this event was observed', lastSeen),
    col('Type', 'string', 'Type of this event (Normal, Warning), new types could be added in the future', (o) => str(o.type)),
    col('Reason', 'string', 'This should be a short, machine understandable string that gives the reason for the transition into the object\'s current status.', (o) => str(o.reason)),
    col('Object', 'string', 'The object that this event is about', (o) => `${str(path(o, 'involvedObject.kind')).toLowerCase()}/${str(path(o, 'involvedObject.name'))}`),
    col('Subobject', 'string', 'The subobject that this event is about', (o) => str(path(o, 'involvedObject.fieldPath')), 1),
    col('Source', 'string', 'The component reporting this event', (o) => {
      const s = rec(o.source);
      const c = str(s.component) || str(o.reportingComponent);
      return str(s.host) ? `${c}, ${str(s.host)}` : c;
    }, 1),
    col('Message', 'string', 'A human-readable description of the status of this operation', (o) => str(o.message)),
    col('First Seen', 'string', 'The time at which the event was first recorded', (o, now) => since(str(o.firstTimestamp) || str(o.eventTime), now), 1),
    col('Count', 'string', 'The number of times this event has occurred', (o) => String(num(o.count) || num(rec(o.series).count) || 1), 1),
    col('Name', 'string', 'Name must be unique within a namespace.', (o) => o.metadata?.name ?? '', 1, 'name'),
  ],
});
