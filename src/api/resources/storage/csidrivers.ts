/**
 * storage.k8s.io/v1 CSIDriver: how the cluster talks to one CSI volume driver, named by the
 * driver's own name. Kubernetes (1.33) defaults every boolean and the policy fields, so the
 * required-value checks below guard only writes that bypass defaulting; attachRequired and
 * volumeLifecycleModes never change once created (podInfoOnMount and fsGroupPolicy became
 * mutable in 1.29). Kubernetes reports attachRequired under the path `spec.attachedRequired`:
 * clients match on it, so it is kept.
 */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { arr, col, path, rec, str } from '../common/table-util.js';
import { immutable, isObject } from '../common/validation.js';
import type { KubeObject } from '../types.js';

const LIFECYCLE_MODES = ['Persistent', 'Ephemeral'];
/** Sorted, as Kubernetes lists them in the NotSupported message. */
const FS_GROUP_POLICIES = ['File', 'None', 'ReadWriteOnceWithFSType'];
const MIN_TOKEN_SECONDS = 10 * 60;
const MAX_TOKEN_SECONDS = 2 ** 32;
const MIN_ALLOCATABLE_UPDATE_SECONDS = 10;

/** The spec as an object the defaults and checks can write to and read. */
function specOf(obj: KubeObject): Record<string, unknown> {
  if (!isObject(obj.spec)) obj.spec = {};
  return obj.spec as Record<string, unknown>;
}

function defaults(obj: KubeObject): void {
  const spec = specOf(obj);
  spec.attachRequired ??= true;
  spec.podInfoOnMount ??= false;
  spec.storageCapacity ??= false;
  spec.fsGroupPolicy ??= 'ReadWriteOnceWithFSType';
  if (arr(spec.volumeLifecycleModes).length === 0) spec.volumeLifecycleModes = ['Persistent'];
  spec.requiresRepublish ??= false;
  spec.seLinuxMount ??= false;
}

function validateTokenRequests(requests: unknown, errs: FieldError[]): void {
  const seen = new Set<string>();
  arr(requests).forEach((raw, i) => {
    const f = `spec.tokenRequests[${i}]`;
    const r = rec(raw);
    const audience = str(r.audience);
    // A repeated audience is reported alone: its expiry is not looked at.
    if (seen.has(audience)) { errs.push(fieldErrors.duplicate(`${f}.audience`, audience)); return; }
    seen.add(audience);
    const secs = r.expirationSeconds;
    if (typeof secs !== 'number') return;
    if (secs < MIN_TOKEN_SECONDS) errs.push(fieldErrors.invalid(`${f}.expirationSeconds`, secs, 'may not specify a duration less than 10 minutes'));
    if (secs > MAX_TOKEN_SECONDS) errs.push(fieldErrors.invalid(`${f}.expirationSeconds`, secs, 'may not specify a duration larger than 2^32 seconds'));
  });
}

function validateSpec(obj: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  const spec = rec(obj.spec);
  const requiredBool = (field: string, at: string): void => {
    if (typeof spec[field] !== 'boolean') errs.push(fieldErrors.required(`spec.${at}`));
  };
  requiredBool('attachRequired', 'attachedRequired');
  requiredBool('podInfoOnMount', 'podInfoOnMount');
  requiredBool('storageCapacity', 'storageCapacity');
  const policy = spec.fsGroupPolicy;
  if (policy !== undefined && policy !== null && !FS_GROUP_POLICIES.includes(String(policy))) {
    errs.push(fieldErrors.notSupported('spec.fsGroupPolicy', policy, FS_GROUP_POLICIES));
  }
  validateTokenRequests(spec.tokenRequests, errs);
  for (const mode of arr(spec.volumeLifecycleModes)) {
    if (!LIFECYCLE_MODES.includes(String(mode))) errs.push(fieldErrors.notSupported('spec.volumeLifecycleModes', mode, LIFECYCLE_MODES));
  }
  requiredBool('seLinuxMount', 'seLinuxMount');
  const period = spec.nodeAllocatableUpdatePeriodSeconds;
  if (typeof period === 'number' && period < MIN_ALLOCATABLE_UPDATE_SECONDS) {
    errs.push(fieldErrors.invalid('spec.nodeAllocatableUpdatePeriodSeconds', period, `must be greater than or equal to ${MIN_ALLOCATABLE_UPDATE_SECONDS} seconds`));
  }
  return errs;
}

const bool = (v: unknown, dflt: boolean): boolean => (typeof v === 'boolean' ? v : dflt);

export const csidrivers = defineResource({
  group: 'storage.k8s.io', versions: ['v1'], kind: 'CSIDriver', plural: 'csidrivers', namespaced: false,
  // Any spec change bumps metadata.generation (Kubernetes' PrepareForUpdate).
  hasGeneration: true,
  defaults,
  validateSpec(obj, old) {
    const errs = validateSpec(obj);
    if (old) {
      immutable(errs, 'spec.attachedRequired', path(obj, 'spec.attachRequired'), path(old, 'spec.attachRequired'));
      immutable(errs, 'spec.volumeLifecycleModes', path(obj, 'spec.volumeLifecycleModes'), path(old, 'spec.volumeLifecycleModes'));
    }
    return errs;
  },
  columns: [
    col('AttachRequired', 'boolean', 'Whether the driver needs an attach operation (ControllerPublishVolume) before mounting.',
      (o) => bool(path(o, 'spec.attachRequired'), true)),
    col('PodInfoOnMount', 'boolean', 'Whether the kubelet passes pod information to the driver on mount.',
      (o) => bool(path(o, 'spec.podInfoOnMount'), false)),
    col('StorageCapacity', 'boolean', 'Whether the scheduler considers the driver\'s CSIStorageCapacity objects.',
      (o) => bool(path(o, 'spec.storageCapacity'), false)),
    col('TokenRequests', 'string', 'Audiences of the service account tokens the kubelet passes to the driver.',
      (o) => {
        const requests = arr(path(o, 'spec.tokenRequests'));
        return requests.length ? requests.map((r) => str(rec(r).audience)).join(',') : '<unset>';
      }),
    col('RequiresRepublish', 'boolean', 'Whether the kubelet calls NodePublishVolume periodically to refresh mounted volumes.',
      (o) => bool(path(o, 'spec.requiresRepublish'), false)),
    col('Modes', 'string', 'The volume lifecycle modes the driver supports (Persistent, Ephemeral).',
      (o) => arr(path(o, 'spec.volumeLifecycleModes')).map(String).join(',') || '<none>'),
  ],
});
