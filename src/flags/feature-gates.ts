/**
 * Feature gate lists (from the reference's Versioning section) and their resolution.
 * The API server, the controller manager and our scheduler share one list; the node agent has
 * its own. A resolved gate map holds every gate of the daemon: defaults, then AllAlpha, then
 * explicit settings (explicit settings always win).
 */
import { FlagError } from './flag-error.js';

export type GateStage = 'alpha' | 'beta' | 'deprecated' | 'none';

export interface FeatureGateSpec {
  readonly name: string;
  readonly default: boolean;
  readonly stage: GateStage;
}

type Row = readonly [name: string, def: boolean, stage: GateStage];
const rows = (list: readonly Row[]): readonly FeatureGateSpec[] =>
  list.map(([name, def, stage]) => ({ name, default: def, stage }));

export const ALL_ALPHA = 'AllAlpha';

export const CONTROL_PLANE_GATES: readonly FeatureGateSpec[] = rows([
  ['APIListChunking', true, 'beta'], ['APIResponseCompression', false, 'alpha'],
  ['Accelerators', false, 'alpha'], ['AdvancedAuditing', true, 'beta'], ['AllAlpha', false, 'alpha'],
  ['AppArmor', true, 'beta'], ['BlockVolume', false, 'alpha'], ['CPUManager', true, 'beta'],
  ['CRIContainerLogRotation', false, 'alpha'], ['CSIPersistentVolume', true, 'beta'],
  ['CustomPodDNS', true, 'beta'], ['CustomResourceSubresources', false, 'alpha'],
  ['CustomResourceValidation', true, 'beta'], ['DebugContainers', false, 'alpha'],
  ['DevicePlugins', true, 'beta'], ['DynamicNodeagentConfig', false, 'alpha'],
  ['EnableEquivalenceClassCache', false, 'alpha'], ['ExpandPersistentVolumes', false, 'alpha'],
  ['ExperimentalCriticalPodAnnotation', false, 'alpha'],
  ['ExperimentalHostUserNamespaceDefaulting', false, 'beta'], ['GCERegionalPersistentDisk', true, 'beta'],
  ['HugePages', true, 'beta'], ['HyperVContainer', false, 'alpha'], ['Initializers', false, 'alpha'],
  ['LocalStorageCapacityIsolation', true, 'beta'], ['MountContainers', false, 'alpha'],
  ['MountPropagation', true, 'beta'], ['PersistentLocalVolumes', true, 'beta'],
  ['PodPriority', false, 'alpha'], ['PodShareProcessNamespace', false, 'alpha'],
  ['ReadOnlyAPIDataVolumes', true, 'deprecated'], ['ResourceLimitsPriorityFunction', false, 'alpha'],
  ['RotateNodeagentClientCertificate', true, 'beta'], ['RotateNodeagentServerCertificate', false, 'alpha'],
  ['RunAsGroup', false, 'alpha'], ['ScheduleDaemonSetPods', false, 'alpha'],
  ['ServiceNodeExclusion', false, 'alpha'], ['ServiceProxyAllowExternalIPs', false, 'deprecated'],
  ['StorageObjectInUseProtection', true, 'beta'], ['StreamingProxyRedirects', true, 'beta'],
  ['SupportIPVSProxyMode', true, 'beta'], ['SupportPodPidsLimit', false, 'alpha'],
  ['TaintBasedEvictions', false, 'alpha'], ['TaintNodesByCondition', false, 'alpha'],
  ['TokenRequest', false, 'alpha'], ['VolumeScheduling', true, 'beta'], ['VolumeSubpath', true, 'none'],
]);

export const NODEAGENT_GATES: readonly FeatureGateSpec[] = rows([
  ['APIListChunking', true, 'beta'], ['APIResponseCompression', false, 'alpha'],
  ['Accelerators', false, 'alpha'], ['AdvancedAuditing', true, 'beta'], ['AllAlpha', false, 'alpha'],
  ['AllowExtTrafficLocalEndpoints', true, 'none'], ['AppArmor', true, 'beta'],
  ['BlockVolume', false, 'alpha'], ['CPUManager', true, 'beta'], ['CSIPersistentVolume', false, 'alpha'],
  ['CustomPodDNS', false, 'alpha'], ['CustomResourceValidation', true, 'beta'],
  ['DebugContainers', false, 'alpha'], ['DevicePlugins', false, 'alpha'],
  ['DynamicNodeagentConfig', false, 'alpha'], ['EnableEquivalenceClassCache', false, 'alpha'],
  ['ExpandPersistentVolumes', false, 'alpha'], ['ExperimentalCriticalPodAnnotation', false, 'alpha'],
  ['ExperimentalHostUserNamespaceDefaulting', false, 'beta'], ['HugePages', true, 'beta'],
  ['Initializers', false, 'alpha'], ['NodeagentConfigFile', false, 'alpha'],
  ['LocalStorageCapacityIsolation', false, 'alpha'], ['MountContainers', false, 'alpha'],
  ['MountPropagation', false, 'alpha'], ['PVCProtection', false, 'alpha'],
  ['PersistentLocalVolumes', false, 'alpha'], ['PodPriority', false, 'alpha'],
  ['ResourceLimitsPriorityFunction', false, 'alpha'], ['RotateNodeagentClientCertificate', true, 'beta'],
  ['RotateNodeagentServerCertificate', false, 'alpha'], ['ServiceNodeExclusion', false, 'alpha'],
  ['StreamingProxyRedirects', true, 'beta'], ['SupportIPVSProxyMode', false, 'beta'],
  ['TaintBasedEvictions', false, 'alpha'], ['TaintNodesByCondition', false, 'alpha'],
  ['VolumeScheduling', false, 'alpha'],
]);

/**
 * Resolves explicit --feature-gates settings against a gate list.
 * Throws FlagError naming --feature-gates for an unknown gate.
 */
export function resolveFeatureGates(
  gates: readonly FeatureGateSpec[],
  explicit: Readonly<Record<string, boolean>>,
): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  for (const g of gates) out[g.name] = g.default;
  for (const name of Object.keys(explicit)) {
    if (!(name in out)) {
      throw new FlagError(`unknown feature gate "${name}" in --feature-gates`, 'feature-gates');
    }
  }
  if (explicit[ALL_ALPHA] === true) {
    for (const g of gates) if (g.stage === 'alpha') out[g.name] = true;
  }
  for (const [name, value] of Object.entries(explicit)) out[name] = value;
  return out;
}
