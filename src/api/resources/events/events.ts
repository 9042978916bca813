/**
 * events.k8s.io/v1 Event: the same objects as core/v1 events (shared storage), seen through
 * renamed fields (regarding/note/deprecated*).
 */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { events as coreEvents, getEventTtlSeconds } from '../core/events.js';
import type { KubeObject } from '../types.js';

const RENAMES: ReadonlyArray<[string, string]> = [
  // [core/v1, events.k8s.io/v1]
  ['involvedObject', 'regarding'], ['message', 'note'], ['source', 'deprecatedSource'],
  ['firstTimestamp', 'deprecatedFirstTimestamp'], ['lastTimestamp', 'deprecatedLastTimestamp'],
  ['count', 'deprecatedCount'], ['reportingComponent', 'reportingController'],
];

function rename(obj: KubeObject, toNew: boolean, apiVersion: string): KubeObject {
  const out: KubeObject = { ...obj, apiVersion };
  for (const [core, ev] of RENAMES) {
    const [from, to] = toNew ? [core, ev] : [ev, core];
    if (from in out) { out[to] = out[from]; delete out[from]; }
  }
  return out;
}

export const eventsV1 = defineResource({
  group: 'events.k8s.io', versions: ['v1'], kind: 'Event', plural: 'events', namespaced: true,
  shortNames: ['ev'],
  storage: { group: '', resource: 'events', version: 'v1' },
  convert(obj, toVersion) {
    if (toVersion === 'storage') return rename(obj, false, 'v1');
    if (obj.apiVersion === 'v1') return rename(obj, true, `events.k8s.io/${toVersion}`);
    return obj;
  },
  validateSpec(obj) {
    const errs: FieldError[] = [];
    if (!obj.eventTime && !obj.deprecatedFirstTimestamp) errs.push(fieldErrors.required('eventTime'));
    if (!['Normal', 'Warning'].includes(String(obj.type))) errs.push(fieldErrors.notSupported('type', obj.type ?? '', ['Normal', 'Warning']));
    if (!obj.reportingController) errs.push(fieldErrors.required('reportingController'));
    if (!obj.reportingInstance) errs.push(fieldErrors.required('reportingInstance'));
    if (!obj.action) errs.push(fieldErrors.required('action'));
    if (!obj.reason) errs.push(fieldErrors.required('reason'));
    if (typeof obj.note === 'string' && obj.note.length > 1024) errs.push(fieldErrors.tooLong('note', 1024));
    return errs;
  },
  ttlSeconds: () => getEventTtlSeconds(),
  fieldSelectors: coreEvents.fieldSelectors,
  tableColumnsIncludeName: true,
  tableColumns: coreEvents.tableColumns,
});
