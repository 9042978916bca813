/**
 * The admission chain: which plugins run (--enable-admission-plugins and
 * --disable-admission-plugins over Kubernetes' default set), in Kubernetes' fixed order
 * whatever the order of the options, and running them.
 *
 * Contract: `admit`/`validate` return undefined when the request has no plugin for that phase
 * or every plugin answered at once; otherwise a promise that settles after the plugins ran one
 * after the other. Names that are known but not built here are reported by `notImplemented` and
 * do not run (the API server logs them once at start). Built-in steps that are not plugins of
 * the options (RBAC's escalation check) are given to the constructor and run first.
 */
import type { ResourceDefinition } from '../../../api/resources/types.js';
import type { AdmissionAttributes, AdmissionContext, AdmissionOperation, AdmissionPlugin, AdmissionResult } from './types.js';
import { alwaysAdmit } from './always-admit.js';
import { alwaysDeny } from './always-deny.js';
import { alwaysPullImages } from './always-pull-images.js';
import { defaultStorageClass } from './default-storage-class.js';
import { defaultTolerationSeconds } from './default-toleration-seconds.js';
import { limitRanger } from './limit-ranger.js';
import { namespaceAutoProvision } from './namespace-autoprovision.js';
import { namespaceExists } from './namespace-exists.js';
import { namespaceLifecycle } from './namespace-lifecycle.js';
import { nodeRestriction } from './node-restriction.js';
import { ownerReferencesPermissionEnforcement } from './owner-references-permission.js';
import { persistentVolumeClaimResize } from './persistent-volume-claim-resize.js';
import { priority } from './priority.js';
import { resourceQuota } from './resource-quota.js';
import { serviceAccount } from './service-account.js';
import { storageObjectInUseProtection } from './storage-object-in-use-protection.js';
import { mutatingAdmissionWebhook } from './webhook/mutating.js';
import { validatingAdmissionWebhook } from './webhook/validating.js';

/** Kubernetes' plugin order (names of our reference only); the options never change it. */
export const ORDERED_PLUGINS: readonly string[] = [
  'AlwaysAdmit', 'NamespaceAutoProvision', 'NamespaceLifecycle', 'NamespaceExists', 'SecurityContextDeny',
  'LimitPodHardAntiAffinityTopology', 'PodPreset', 'LimitRanger', 'ServiceAccount', 'NodeRestriction',
  'AlwaysPullImages', 'ImagePolicyWebhook', 'PodSecurityPolicy', 'PodNodeSelector', 'Priority',
  'DefaultTolerationSeconds', 'PodTolerationRestriction', 'DenyEscalatingExec', 'DenyExecOnPrivileged',
  'EventRateLimit', 'ExtendedResourceToleration', 'PersistentVolumeLabel', 'DefaultStorageClass',
  'StorageObjectInUseProtection', 'OwnerReferencesPermissionEnforcement', 'PersistentVolumeClaimResize',
  'InitialResources', 'Initializers', 'MutatingAdmissionWebhook', 'ValidatingAdmissionWebhook', 'ResourceQuota',
  'AlwaysDeny',
];

/** On unless --disable-admission-plugins names them (Kubernetes' defaults among our names). */
export const DEFAULT_ON_PLUGINS: ReadonlySet<string> = new Set([
  'NamespaceLifecycle', 'LimitRanger', 'ServiceAccount', 'Priority', 'DefaultTolerationSeconds', 'DefaultStorageClass',
  'StorageObjectInUseProtection', 'PersistentVolumeClaimResize', 'MutatingAdmissionWebhook', 'ValidatingAdmissionWebhook',
  'ResourceQuota',
]);

const FACTORIES: Readonly<Record<string, (ctx: AdmissionContext) => AdmissionPlugin>> = {
  AlwaysAdmit: alwaysAdmit,
  AlwaysDeny: alwaysDeny,
  AlwaysPullImages: alwaysPullImages,
  DefaultStorageClass: defaultStorageClass,
  DefaultTolerationSeconds: defaultTolerationSeconds,
  LimitRanger: limitRanger,
  MutatingAdmissionWebhook: mutatingAdmissionWebhook,
  NamespaceAutoProvision: namespaceAutoProvision,
  NamespaceExists: namespaceExists,
  NamespaceLifecycle: namespaceLifecycle,
  NodeRestriction: nodeRestriction,
  OwnerReferencesPermissionEnforcement: ownerReferencesPermissionEnforcement,
  PersistentVolumeClaimResize: persistentVolumeClaimResize,
  Priority: priority,
  ResourceQuota: resourceQuota,
  ServiceAccount: serviceAccount,
  StorageObjectInUseProtection: storageObjectInUseProtection,
  ValidatingAdmissionWebhook: validatingAdmissionWebhook,
};

export interface AdmissionSelection {
  readonly enable: readonly string[];
  readonly disable: readonly string[];
}

/** The plugin names that run, in order: the defaults plus `enable`, minus `disable`. */
export function selectedPlugins(sel: AdmissionSelection): string[] {
  const on = new Set([...DEFAULT_ON_PLUGINS, ...sel.enable]);
  for (const n of sel.disable) on.delete(n);
  return ORDERED_PLUGINS.filter((n) => on.has(n));
}

/** A name both enabled and disabled (Kubernetes refuses to start then). */
export function conflictingPlugins(sel: AdmissionSelection): string[] {
  const disabled = new Set(sel.disable);
  return sel.enable.filter((n) => disabled.has(n));
}

export type Phase = 'admit' | 'validate';

export class AdmissionChain {
  readonly plugins: readonly AdmissionPlugin[];
  /** Selected names that this build does not implement (they do not run). */
  readonly notImplemented: readonly string[];
  /** Main-resource requests: per definition, one slot per phase and operation (no string key on the hot path). */
  private readonly byDef = new WeakMap<ResourceDefinition, Array<readonly AdmissionPlugin[] | undefined | null>>();
  private readonly bySubresource = new Map<string, readonly AdmissionPlugin[] | undefined>();

  constructor(names: readonly string[], ctx: AdmissionContext, builtIns: readonly AdmissionPlugin[] = []) {
    this.plugins = [...builtIns, ...names.filter((n) => FACTORIES[n]).map((n) => FACTORIES[n]!(ctx))];
    this.notImplemented = names.filter((n) => !FACTORIES[n]);
  }

  /** Mutating plugins for a request; undefined when none. */
  admit(a: AdmissionAttributes): AdmissionResult {
    return this.run('admit', a);
  }

  /** Validating plugins for a request; undefined when none. */
  validate(a: AdmissionAttributes): AdmissionResult {
    return this.run('validate', a);
  }

  /** Whether any plugin of the phase wants this request, so callers build its attributes only then. */
  wants(phase: Phase, operation: AdmissionOperation, def: ResourceDefinition, subresource: string): boolean {
    return this.pluginsFor(phase, operation, def, subresource) !== undefined;
  }

  private pluginsFor(phase: Phase, operation: AdmissionOperation, def: ResourceDefinition, subresource: string): readonly AdmissionPlugin[] | undefined {
    if (subresource === '') {
      let slots = this.byDef.get(def);
      if (!slots) this.byDef.set(def, slots = new Array<readonly AdmissionPlugin[] | undefined | null>(6).fill(null));
      const i = (phase === 'admit' ? 0 : 3) + (operation === 'CREATE' ? 0 : operation === 'UPDATE' ? 1 : 2);
      const known = slots[i];
      if (known !== null) return known;
      return (slots[i] = this.select(phase, operation, def, subresource));
    }
    const key = `${phase} ${operation} ${def.group}/${def.plural}/${subresource}`;
    if (this.bySubresource.has(key)) return this.bySubresource.get(key);
    const found = this.select(phase, operation, def, subresource);
    this.bySubresource.set(key, found);
    return found;
  }

  private select(phase: Phase, operation: AdmissionOperation, def: ResourceDefinition, subresource: string): readonly AdmissionPlugin[] | undefined {
    const list = this.plugins.filter((p) => p[phase] !== undefined && p.handles(operation, def, subresource));
    return list.length ? list : undefined;
  }

  private run(phase: Phase, a: AdmissionAttributes): AdmissionResult {
    const list = this.pluginsFor(phase, a.operation, a.def, a.subresource);
    if (!list) return undefined;
    for (let i = 0; i < list.length; i++) {
      const r = list[i]![phase]!(a);
      if (r instanceof Promise) return r.then(() => this.runFrom(phase, list, i + 1, a));
    }
    return undefined;
  }

  private async runFrom(phase: Phase, list: readonly AdmissionPlugin[], from: number, a: AdmissionAttributes): Promise<void> {
    for (let i = from; i < list.length; i++) await list[i]![phase]!(a);
  }
}
