/**
 * scheduling.k8s.io/v1 PriorityClass: a name for a pod priority. Names starting with `system-`
 * belong to the two built-in classes, which the API server creates on start; a user class may
 * not rank above HIGHEST_USER_DEFINABLE_PRIORITY. `value` and `preemptionPolicy` never change
 * once created. The Priority admission plugin resolves pods' priorities from these objects.
 */
import { errors, fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { ageColumn, col, str } from '../common/table-util.js';
import { immutable } from '../common/validation.js';
import type { KubeObject } from '../types.js';

export const PREEMPT_LOWER_PRIORITY = 'PreemptLowerPriority';
const PREEMPTION_POLICIES = [PREEMPT_LOWER_PRIORITY, 'Never'];

/** The highest value a user class may have; higher ones are the system classes'. */
const HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000;
const SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY;
const SYSTEM_PRIORITY_CLASS_PREFIX = 'system-';

interface SystemPriorityClass {
  readonly name: string;
  readonly value: number;
  readonly description: string;
}

/** The built-in classes (none of them is the global default). */
export const SYSTEM_PRIORITY_CLASSES: readonly SystemPriorityClass[] = [
  { name: 'system-node-critical', value: SYSTEM_CRITICAL_PRIORITY + 1000, description: 'Used for system critical pods that must not be moved from their current node.' },
  { name: 'system-cluster-critical', value: SYSTEM_CRITICAL_PRIORITY, description: 'Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.' },
];

/** Why a `system-` class is not one of the built-in ones, as Kubernetes words it; undefined when it is. */
function unknownSystemClass(name: string, value: unknown, globalDefault: boolean): string | undefined {
  const known = SYSTEM_PRIORITY_CLASSES.find((c) => c.name === name);
  if (!known) return `${name} is not a known system priority class`;
  if (value !== known.value) return `value of ${name} PriorityClass must be ${known.value}`;
  if (globalDefault) return `globalDefault of ${name} PriorityClass must be false`;
  return undefined;
}

function validateCreate(obj: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  const name = obj.metadata?.name ?? '';
  if (name.startsWith(SYSTEM_PRIORITY_CLASS_PREFIX)) {
    const why = unknownSystemClass(name, obj.value, obj.globalDefault === true);
    if (why) errs.push(fieldErrors.forbidden('metadata.name', `priority class names with '${SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved for system use only. error: ${why}`));
  } else if (typeof obj.value === 'number' && obj.value > HIGHEST_USER_DEFINABLE_PRIORITY) {
    errs.push(fieldErrors.forbidden('value', `maximum allowed value of a user defined priority is ${HIGHEST_USER_DEFINABLE_PRIORITY}`));
  }
  const policy = obj.preemptionPolicy;
  if (policy === '') errs.push(fieldErrors.required('preemptionPolicy'));
  else if (policy !== undefined && policy !== null && !PREEMPTION_POLICIES.includes(String(policy))) {
    errs.push(fieldErrors.notSupported('preemptionPolicy', policy, PREEMPTION_POLICIES));
  }
  return errs;
}

/** Kubernetes checks only what may not change on update (the name rules held on create). */
function validateUpdate(obj: KubeObject, old: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  if (obj.value !== old.value) errs.push(fieldErrors.forbidden('value', 'may not be changed in an update.'));
  immutable(errs, 'preemptionPolicy', obj.preemptionPolicy, old.preemptionPolicy);
  return errs;
}

export const priorityclasses = defineResource({
  group: 'scheduling.k8s.io', versions: ['v1'], kind: 'PriorityClass', plural: 'priorityclasses', namespaced: false,
  shortNames: ['pc'],
  defaults(obj) {
    // `value` is optional in the API: a class without one has value 0, and says so.
    if (obj.value === undefined || obj.value === null) obj.value = 0;
    if (obj.preemptionPolicy === undefined || obj.preemptionPolicy === null) obj.preemptionPolicy = PREEMPT_LOWER_PRIORITY;
  },
  // Generation 1 from the start, never bumped (Kubernetes' strategy for this kind).
  prepareForCreate(obj) { (obj.metadata ??= {}).generation = 1; },
  validateSpec: (obj, old) => (old ? validateUpdate(obj, old) : validateCreate(obj)),
  guardDelete(name) {
    if (SYSTEM_PRIORITY_CLASSES.some((c) => c.name === name)) {
      throw errors.admissionForbidden({ group: 'scheduling.k8s.io', resource: 'priorityclasses', name }, 'this is a system priority class and cannot be deleted');
    }
  },
  // kubectl shows NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY: the policy comes after AGE.
  noAge: true,
  columns: [
    col('Value', 'integer', 'The priority pods naming this class get.',
      (o) => (typeof o.value === 'number' ? o.value : 0)),
    col('Global-Default', 'boolean', 'Whether pods naming no class get this one (at most one class is the default).',
      (o) => o.globalDefault === true),
    ageColumn,
    col('PreemptionPolicy', 'string', 'Whether pods of this class may preempt lower-priority pods: PreemptLowerPriority (default) or Never.',
      (o) => str(o.preemptionPolicy)),
  ],
});
