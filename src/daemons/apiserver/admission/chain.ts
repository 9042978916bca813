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
 * `connect` runs the CONNECT checks (pods/exec, pods/attach) for the handler serving them.
 * Plugin configurations arrive parsed in AdmissionContext.pluginConfigs (CONFIG_PARSERS, run at
 * start by load-configs.ts). Names Kubernetes removed are refused at start (REMOVED_PLUGINS);
 * PodSecurityPolicy is replaced by PodSecurity and said so at start (startNotes).
 */
import type { ResourceDefinition } from '../../../api/resources/types.js';
import type { AdmissionAttributes, AdmissionContext, AdmissionOperation, AdmissionPlugin, AdmissionResult, ConnectAttributes } from './types.js';
import { denyEscalatingExec, denyExecOnPrivileged } from './deny-exec.js';
import { eventRateLimit, parseEventRateLimitConfig } from './event-rate-limit.js';
import { extendedResourceToleration } from './extended-resource-toleration.js';
import { imagePolicyWebhook, parseImagePolicyWebhookConfig } from './image-policy-webhook.js';
import { limitPodHardAntiAffinityTopology } from './limit-pod-hard-anti-affinity.js';
import { parsePodNodeSelectorConfig, podNodeSelector } from './pod-node-selector.js';
import { parsePodSecurityConfig, podSecurity } from './pod-security/plugin.js';
import { parsePodTolerationRestrictionConfig, podTolerationRestriction } from './pod-toleration-restriction.js';
import { securityContextDeny } from './security-context-deny.js';
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
  'AlwaysPullImages', 'ImagePolicyWebhook', 'PodSecurityPolicy', 'PodSecurity', 'PodNodeSelector', 'Priority',
  'DefaultTolerationSeconds', 'PodTolerationRestriction', 'DenyEscalatingExec', 'DenyExecOnPrivileged',
  'EventRateLimit', 'ExtendedResourceToleration', 'PersistentVolumeLabel', 'DefaultStorageClass',
  'StorageObjectInUseProtection', 'OwnerReferencesPermissionEnforcement', 'PersistentVolumeClaimResize',
  'InitialResources', 'Initializers', 'MutatingAdmissionWebhook', 'ValidatingAdmissionWebhook', 'ResourceQuota',
  'AlwaysDeny',
];

/** On unless --disable-admission-plugins names them (Kubernetes' defaults among our names). */
export const DEFAULT_ON_PLUGINS: ReadonlySet<string> = new Set([
  'NamespaceLifecycle', 'LimitRanger', 'ServiceAccount', 'PodSecurity', 'Priority', 'DefaultTolerationSeconds', 'DefaultStorageClass',
  'StorageObjectInUseProtection', 'PersistentVolumeClaimResize', 'MutatingAdmissionWebhook', 'ValidatingAdmissionWebhook',
  'ResourceQuota',
]);

/**
 * Names Kubernetes removed with no successor: refused at start (one line saying why) rather
 * than accepted and silently doing nothing.
 */
export const REMOVED_PLUGINS: Readonly<Record<string, string>> = {
  Initializers: 'Initializers was removed from Kubernetes with the alpha initializers API and has no successor',
  InitialResources: 'InitialResources, an experiment, was removed from Kubernetes and has no successor',
  PodPreset: 'PodPreset was removed from Kubernetes (1.20) with the settings.k8s.io API and has no successor',
  PersistentVolumeLabel: 'PersistentVolumeLabel was removed from Kubernetes with the in-tree cloud providers and has no successor',
};

/** Names Kubernetes replaced: said at start when enabled (they do not run). */
export const SUCCEEDED_PLUGINS: Readonly<Record<string, string>> = {
  PodSecurityPolicy: 'PodSecurityPolicy was removed from Kubernetes (1.25); Pod Security admission (PodSecurity, on by default) is its successor: label namespaces with pod-security.kubernetes.io/enforce, audit and warn',
};

/**
 * Parsers of plugin configurations (--admission-control-config-file): given the decoded
 * configuration, or undefined when the file names none, they return what the plugin's factory
 * reads from AdmissionContext.pluginConfigs, or throw (a start-up error).
 */
export const CONFIG_PARSERS: Readonly<Record<string, (raw: unknown) => unknown>> = {
  EventRateLimit: parseEventRateLimitConfig,
  ImagePolicyWebhook: parseImagePolicyWebhookConfig,
  PodNodeSelector: parsePodNodeSelectorConfig,
  PodSecurity: parsePodSecurityConfig,
  PodTolerationRestriction: parsePodTolerationRestrictionConfig,
};

const FACTORIES: Readonly<Record<string, (ctx: AdmissionContext) => AdmissionPlugin>> = {
  AlwaysAdmit: alwaysAdmit,
  AlwaysDeny: alwaysDeny,
  AlwaysPullImages: alwaysPullImages,
  DefaultStorageClass: defaultStorageClass,
  DefaultTolerationSeconds: defaultTolerationSeconds,
  DenyEscalatingExec: denyEscalatingExec,
  DenyExecOnPrivileged: denyExecOnPrivileged,
  EventRateLimit: eventRateLimit,
  ExtendedResourceToleration: extendedResourceToleration,
  ImagePolicyWebhook: imagePolicyWebhook,
  LimitPodHardAntiAffinityTopology: limitPodHardAntiAffinityTopology,
  LimitRanger: limitRanger,
  MutatingAdmissionWebhook: mutatingAdmissionWebhook,
  NamespaceAutoProvision: namespaceAutoProvision,
  NamespaceExists: namespaceExists,
  NamespaceLifecycle: namespaceLifecycle,
  NodeRestriction: nodeRestriction,
  OwnerReferencesPermissionEnforcement: ownerReferencesPermissionEnforcement,
  PersistentVolumeClaimResize: persistentVolumeClaimResize,
  PodNodeSelector: podNodeSelector,
  PodSecurity: podSecurity,
  PodTolerationRestriction: podTolerationRestriction,
  Priority: priority,
  ResourceQuota: resourceQuota,
  SecurityContextDeny: securityContextDeny,
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

/** Enabled names Kubernetes removed without a successor, with why (a start-up error). */
export function removedPlugins(sel: AdmissionSelection): string[] {
  return sel.enable.filter((n) => REMOVED_PLUGINS[n]).map((n) => REMOVED_PLUGINS[n]!);
}

/**
 * Each selected plugin's parsed configuration (its parser run on what the file gives, or on
 * undefined; a parser may read files, so this settles later): rejects with the parser's error,
 * with the plugin's name as `plugin`, for the caller to report.
 */
export async function parsePluginConfigs(names: readonly string[], raw: ReadonlyMap<string, unknown>): Promise<Map<string, unknown>> {
  const out = new Map<string, unknown>();
  for (const n of names) {
    const parse = CONFIG_PARSERS[n];
    if (!parse) continue;
    try {
      out.set(n, await parse(raw.get(n)));
    } catch (e) {
      throw Object.assign(new Error((e as Error).message), { plugin: n });
    }
  }
  return out;
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
  /** What to say at start about selected names that do not run (replaced or not built). */
  readonly startNotes: readonly string[];
  private readonly byConnect = new Map<string, readonly AdmissionPlugin[] | undefined>();
  /** Main-resource requests: per definition, one slot per phase and operation (no string key on the hot path). */
  private readonly byDef = new WeakMap<ResourceDefinition, Array<readonly AdmissionPlugin[] | undefined | null>>();
  private readonly bySubresource = new Map<string, readonly AdmissionPlugin[] | undefined>();

  constructor(names: readonly string[], ctx: AdmissionContext, builtIns: readonly AdmissionPlugin[] = []) {
    this.plugins = [...builtIns, ...names.filter((n) => FACTORIES[n]).map((n) => FACTORIES[n]!(ctx))];
    this.notImplemented = names.filter((n) => !FACTORIES[n] && !SUCCEEDED_PLUGINS[n]);
    this.startNotes = [
      ...names.filter((n) => SUCCEEDED_PLUGINS[n]).map((n) => SUCCEEDED_PLUGINS[n]!),
      ...(this.notImplemented.length ? [`enabled admission plugins that are not implemented yet will not run: ${this.notImplemented.join(', ')}`] : []),
    ];
  }

  /**
   * CONNECT admission (pods/exec, pods/attach): the plugins that check connections, asked
   * by the handler serving the subresource before it connects; undefined when none applies.
   */
  connect(a: ConnectAttributes): AdmissionResult {
    const key = `${a.def.group}/${a.def.plural}/${a.subresource}`;
    let list = this.byConnect.get(key);
    if (!this.byConnect.has(key)) {
      const found = this.plugins.filter((p) => p.connect && p.handlesConnect?.(a.def, a.subresource));
      this.byConnect.set(key, list = found.length ? found : undefined);
    }
    if (!list) return undefined;
    const run = list;
    return (async () => { for (const p of run) await p.connect!(a); })();
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
