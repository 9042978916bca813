/**
 * Priority, as Kubernetes' plugin:
 *
 * - Pod create: `priorityClassName` names a PriorityClass, whose `value` becomes the pod's
 *   `priority` and whose `preemptionPolicy` the pod's; an unknown name is refused. A pod naming
 *   no class gets the global default class (its name too) when there is one, else priority 0
 *   and PreemptLowerPriority. A pod may not set `priority` or `preemptionPolicy` to anything
 *   else itself.
 * - Pod update: a body without `priority` or `preemptionPolicy` keeps the stored ones (pod
 *   validation refuses any other change to them).
 * - PriorityClass create/update: at most one class is the global default.
 * (The built-in classes cannot be deleted whether or not this plugin runs: priorityclasses.ts.)
 *
 * Contract: a named class is read from the watch cache once it is as new as the store (so a
 * class created a moment ago is found), else with one consistent read, and remembered per
 * stored entry, so a pod naming a class settles at once in the common case. The global default
 * a pod naming none gets comes from the store's mirror of the classes (src/storage/store-mirror.ts,
 * worked out once per change), as Kubernetes' plugin reads its informer: no list per pod, and a
 * default class is in effect once the mirror has seen it. PriorityClass writes check the one
 * global default against a consistent list. When several classes are global defaults (two
 * creates racing), the one with the lowest value counts, as in Kubernetes.
 */
import { errors } from '../../../api/meta/status.js';
import { PREEMPT_LOWER_PRIORITY } from '../../../api/resources/scheduling/priorityclasses.js';
import type { KubeObject, ResourceDefinition } from '../../../api/resources/types.js';
import type { KeyValue } from '../../../storage/interface.js';
import type { ObjectStore } from '../../../storage/object-store-types.js';
import { storeMirror, type StoreMirror } from '../../../storage/store-mirror.js';
import type { AdmissionAttributes, AdmissionContext, AdmissionPlugin } from './types.js';
import { isPod } from './types.js';

const GROUP = 'scheduling.k8s.io';
const RESOURCE = 'priorityclasses';
const isPriorityClasses = (def: ResourceDefinition): boolean => def.group === GROUP && def.plural === RESOURCE;

type Dict = Record<string, unknown>;
const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);
const given = (v: unknown): boolean => v !== undefined && v !== null;

/** What admission needs of a class. */
interface ClassInfo {
  readonly name: string;
  readonly value: number;
  readonly preemptionPolicy?: string;
  readonly globalDefault: boolean;
}

/** Per stored entry (immutable; the cache hands out the same one while the class is unchanged). */
const infoByEntry = new WeakMap<KeyValue, ClassInfo>();

function infoOf(o: KubeObject): ClassInfo {
  return {
    name: o.metadata?.name ?? '',
    value: typeof o.value === 'number' ? o.value : 0,
    ...(typeof o.preemptionPolicy === 'string' ? { preemptionPolicy: o.preemptionPolicy } : {}),
    globalDefault: o.globalDefault === true,
  };
}

function entryInfo(kv: KeyValue, decode: (kv: KeyValue) => Promise<KubeObject>): ClassInfo | Promise<ClassInfo> {
  return infoByEntry.get(kv) ?? decode(kv).then((o) => {
    const info = infoOf(o);
    infoByEntry.set(kv, info);
    return info;
  });
}

/** The class of this name, undefined when there is none; at once when the current cache holds it. */
function classNamed(store: ObjectStore, name: string): ClassInfo | undefined | Promise<ClassInfo | undefined> {
  const ref = { group: GROUP, resource: RESOURCE, namespace: '', name };
  const cached = store.peekEntry(ref, true);
  if (cached) return entryInfo(cached.kv, cached.decode);
  if (cached === undefined) return undefined;
  return store.getEntry(ref).then((e) => (e ? entryInfo(e.kv, e.decode) : undefined));
}

/** The global default among these classes: the lowest-valued one when there are several. */
function lowestDefault(classes: Iterable<ClassInfo>): ClassInfo | undefined {
  let found: ClassInfo | undefined;
  for (const info of classes) if (info.globalDefault && (!found || info.value < found.value)) found = info;
  return found;
}

/** The global default class by a consistent list (for PriorityClass writes). */
async function defaultClass(store: ObjectStore): Promise<ClassInfo | undefined> {
  const res = await store.list({ group: GROUP, resource: RESOURCE, namespace: '', entries: true });
  const infos: ClassInfo[] = [];
  for (const kv of res.entries ?? []) infos.push(await entryInfo(kv, res.decode!));
  return lowestDefault(infos);
}

/** The global default class as the mirror has it, worked out once per change of the classes. */
function mirroredDefault(mirror: StoreMirror): () => ClassInfo | undefined | Promise<ClassInfo | undefined> {
  let generation = -1;
  let found: ClassInfo | undefined;
  const now = (): ClassInfo | undefined => {
    if (mirror.generation !== generation) {
      generation = mirror.generation;
      found = lowestDefault([...mirror.objects.values()].map(infoOf));
    }
    return found;
  };
  return () => (mirror.synced ? now() : mirror.ready.then(now));
}

function forbidden(a: AdmissionAttributes, resource: string, group: string, why: string): Error {
  return errors.admissionForbidden({ group, resource, name: a.name }, why);
}

/** Sets the pod's priority (and policy, and the default class's name) from the class it resolved to. */
function applyClass(a: AdmissionAttributes, spec: Dict, named: string, cls: ClassInfo | undefined): void {
  if (named !== '' && !cls) throw forbidden(a, 'pods', '', `no PriorityClass with name ${named} was found`);
  const value = cls ? cls.value : 0;
  const policy = cls ? cls.preemptionPolicy : PREEMPT_LOWER_PRIORITY;
  if (named === '' && cls) spec.priorityClassName = cls.name;
  if (given(spec.priority) && spec.priority !== value) {
    throw forbidden(a, 'pods', '', `the integer value of priority (${String(spec.priority)}) must not be provided in pod spec; priority admission controller computed ${value} from the given PriorityClass name`);
  }
  spec.priority = value;
  if (policy === undefined) return;
  if (given(spec.preemptionPolicy) && spec.preemptionPolicy !== policy) {
    throw forbidden(a, 'pods', '', `the string value of PreemptionPolicy (${String(spec.preemptionPolicy)}) must not be provided in pod spec; priority admission controller computed ${policy} from the given PriorityClass name`);
  }
  spec.preemptionPolicy = policy;
}

function admitPodCreate(store: ObjectStore, globalDefault: ReturnType<typeof mirroredDefault>, a: AdmissionAttributes, spec: Dict): void | Promise<void> {
  const named = typeof spec.priorityClassName === 'string' ? spec.priorityClassName : '';
  const cls = named === '' ? globalDefault() : classNamed(store, named);
  if (cls instanceof Promise) return cls.then((c) => applyClass(a, spec, named, c));
  applyClass(a, spec, named, cls);
}

/** An update body that leaves them out keeps what the plugin set on create. */
function admitPodUpdate(spec: Dict, old: KubeObject | undefined): void {
  const oldSpec = isDict(old?.spec) ? old.spec : {};
  if (!given(spec.priority) && given(oldSpec.priority)) spec.priority = oldSpec.priority;
  if (!given(spec.preemptionPolicy) && given(oldSpec.preemptionPolicy)) spec.preemptionPolicy = oldSpec.preemptionPolicy;
}

async function validateGlobalDefault(store: ObjectStore, a: AdmissionAttributes): Promise<void> {
  const current = await defaultClass(store);
  if (current && (a.operation === 'CREATE' || current.name !== a.name)) {
    throw forbidden(a, RESOURCE, GROUP, `PriorityClass ${current.name} is already marked as default. Only one default can exist`);
  }
}

export function priority(ctx: AdmissionContext): AdmissionPlugin {
  const globalDefault = mirroredDefault(storeMirror(ctx.store, GROUP, RESOURCE, ctx.log));
  return {
    name: 'Priority',
    handles: (op, def, sub) => sub === '' && op !== 'DELETE' && (isPod(def) || isPriorityClasses(def)),
    admit(a) {
      if (!isPod(a.def) || !isDict(a.object?.spec)) return;
      const spec = a.object.spec;
      if (a.operation === 'CREATE') return admitPodCreate(ctx.store, globalDefault, a, spec);
      admitPodUpdate(spec, a.oldObject);
    },
    validate(a) {
      if (!isPriorityClasses(a.def)) return;
      if (a.object?.globalDefault === true) return validateGlobalDefault(ctx.store, a);
    },
  };
}
