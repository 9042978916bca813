/**
 * Fields and messages newer than the kubectl binary the generator read (1.33), as served by
 * Kubernetes HEAD: numbers and wire types from the HEAD .pb fixtures, JSON names and value
 * shapes from the .json fixtures, names of upstream types where we read them (the rest are our
 * names for the shapes; only OpenAPI shows them). Part of the hand table (patch-metadata.ts).
 *
 * Pointer-ness is not visible on the wire: numbers, booleans and messages are marked optional,
 * so that a zero a client sends is kept and an absent message stays absent (the safe side).
 * Integer widths are not visible for positive values either: ids and generations are int64
 * as elsewhere in Kubernetes, counts and modes int32.
 */
import type { FieldDecl, MessageDecl } from './types.js';

const CORE = 'k8s.io.api.core.v1';
const META = 'k8s.io.apimachinery.pkg.apis.meta.v1';
const TIME = `${META}.Time`;
const QUANTITY = 'k8s.io.apimachinery.pkg.api.resource.Quantity';

const int32Opt = (name: string, number: number): FieldDecl => ({ name, number, type: { scalar: 'int32' }, optional: true });
const int64Opt = (name: string, number: number): FieldDecl => ({ name, number, type: { scalar: 'int64' }, optional: true });
const boolOpt = (name: string, number: number): FieldDecl => ({ name, number, type: { scalar: 'bool' }, optional: true });
const str = (name: string, number: number): FieldDecl => ({ name, number, type: { scalar: 'string' } });
const strList = (name: string, number: number): FieldDecl => ({ name, number, type: { scalar: 'string' }, repeated: true, listType: 'atomic' });
const msgOpt = (name: string, number: number, message: string): FieldDecl => ({ name, number, type: { message }, optional: true });
const msgList = (name: string, number: number, message: string): FieldDecl => ({ name, number, type: { message }, repeated: true, listType: 'atomic' });

const restartRules: FieldDecl = { ...msgList('restartPolicyRules', 25, `${CORE}.ContainerRestartRule`), goAfter: 'restartPolicy' };

export const addedFields: Readonly<Record<string, readonly FieldDecl[]>> = {
  [`${CORE}.PodSpec`]: [
    { name: 'hostnameOverride', number: 41, type: { scalar: 'string' }, optional: true },
    msgOpt('schedulingGroup', 43, `${CORE}.PodSchedulingGroup`),
    { name: 'evictionResponders', number: 44, type: { message: `${CORE}.EvictionResponder` }, repeated: true,
      patchStrategy: 'merge', patchMergeKey: 'name', listType: 'map', listMapKeys: ['name'] },
  ],
  [`${CORE}.PodStatus`]: [
    msgOpt('extendedResourceClaimStatus', 18, `${CORE}.PodExtendedResourceClaimStatus`),
    { name: 'allocatedResources', number: 19, type: { message: QUANTITY }, map: true },
    msgOpt('resources', 20, `${CORE}.ResourceRequirements`),
    msgList('nodeAllocatableResourceClaimStatuses', 21, `${CORE}.NodeAllocatableResourceClaimStatus`),
    { ...msgList('volumeHealth', 22, `${CORE}.VolumeHealthStatus`), listType: 'map', listMapKeys: ['name'] },
  ],
  [`${CORE}.Container`]: [restartRules],
  [`${CORE}.EphemeralContainerCommon`]: [restartRules],
  [`${CORE}.NodeSpec`]: [msgOpt('podPreemptionPolicy', 8, `${CORE}.NodePodPreemptionPolicy`)],
  [`${CORE}.NodeStatus`]: [strList('declaredFeatures', 14)],
  [`${CORE}.EmptyDirVolumeSource`]: [int32Opt('mode', 3)],
  [`${CORE}.KeyToPath`]: [int64Opt('user', 4)],
  [`${CORE}.SecretVolumeSource`]: [int64Opt('defaultUser', 5)],
  [`${CORE}.ConfigMapVolumeSource`]: [int64Opt('defaultUser', 5)],
  [`${CORE}.DownwardAPIVolumeFile`]: [int64Opt('user', 5)],
  [`${CORE}.DownwardAPIVolumeSource`]: [int64Opt('defaultUser', 3)],
  [`${CORE}.ProjectedVolumeSource`]: [int64Opt('defaultUser', 3)],
  [`${CORE}.ServiceAccountTokenProjection`]: [int64Opt('user', 4)],
  [`${CORE}.ClusterTrustBundleProjection`]: [int64Opt('user', 6)],
  [`${CORE}.VolumeProjection`]: [msgOpt('podCertificate', 6, `${CORE}.PodCertificateProjection`)],
  [`${CORE}.EnvVarSource`]: [msgOpt('fileKeyRef', 5, `${CORE}.FileKeySelector`)],
  [`${CORE}.VolumeMount`]: [strList('bindMountOptions', 8)],
  [`${CORE}.VolumeMountStatus`]: [msgOpt('volumeStatus', 5, `${CORE}.VolumeStatus`)],
  [`${CORE}.HTTPGetAction`]: [str('protocol', 6)],
  [`${CORE}.GRPCAction`]: [str('mode', 3)],
  [`${CORE}.ResourceHealth`]: [str('message', 6)],
  [`${CORE}.PersistentVolumeClaimStatus`]: [msgOpt('healthStatus', 10, `${CORE}.PersistentVolumeClaimHealthStatus`)],
  [`${META}.ListMeta`]: [msgOpt('shardInfo', 5, `${META}.ShardInfo`)],
  [`${META}.ListOptions`]: [str('shardSelector', 15)],
  'k8s.io.api.autoscaling.v2.HorizontalPodAutoscalerCondition': [int64Opt('observedGeneration', 6)],
  'k8s.io.api.storage.v1.CSIDriverSpec': [boolOpt('serviceAccountTokenInSecrets', 10), boolOpt('preventPodSchedulingIfMissing', 11)],
  'k8s.io.api.storage.v1.CSINode': [msgOpt('status', 3, 'k8s.io.api.storage.v1.CSINodeStatus')],
  'k8s.io.api.batch.v1.JobSpec': [msgOpt('scheduling', 17, 'k8s.io.api.batch.v1.JobScheduling')],
  // A map of string lists; the value has the wire and JSON form of authentication's ExtraValue.
  'k8s.io.api.authentication.v1.TokenRequestSpec': [{ name: 'attestations', number: 5, type: { message: 'k8s.io.api.authentication.v1.ExtraValue' }, map: true }],
};

const healthCondition = (name: string, extra: FieldDecl[] = []): MessageDecl => ({ name, fields: [
  str('status', 1), str('reason', 2), str('message', 3), ...extra,
] });

export const addedMessages: readonly MessageDecl[] = [
  { name: `${CORE}.ContainerRestartRule`, fields: [
    { ...str('action', 1), required: true },
    msgOpt('exitCodes', 2, `${CORE}.ContainerRestartRuleOnExitCodes`),
  ] },
  { name: `${CORE}.ContainerRestartRuleOnExitCodes`, fields: [
    { ...str('operator', 1), required: true },
    { name: 'values', number: 2, type: { scalar: 'int32' }, repeated: true, listType: 'set' },
  ] },
  { name: `${CORE}.EvictionResponder`, fields: [{ ...str('name', 1), required: true }, int32Opt('priority', 2)] },
  { name: `${CORE}.PodSchedulingGroup`, fields: [{ ...str('podGroupName', 1), optional: true }] },
  { name: `${CORE}.NodePodPreemptionPolicy`, fields: [strList('disableResizePreemption', 1)] },
  { name: `${CORE}.PodCertificateProjection`, fields: [
    str('signerName', 1), str('keyType', 2), int32Opt('maxExpirationSeconds', 3), str('credentialBundlePath', 4),
    str('keyPath', 5), str('certificateChainPath', 6), { name: 'userAnnotations', number: 7, type: { scalar: 'string' }, map: true },
    int64Opt('user', 8),
  ] },
  { name: `${CORE}.FileKeySelector`, fields: [
    { ...str('volumeName', 1), required: true }, { ...str('path', 2), required: true }, { ...str('key', 3), required: true }, boolOpt('optional', 4),
  ] },
  { name: `${CORE}.PodExtendedResourceClaimStatus`, fields: [
    msgList('requestMappings', 1, `${CORE}.ContainerExtendedResourceRequest`), str('resourceClaimName', 2),
  ] },
  { name: `${CORE}.ContainerExtendedResourceRequest`, fields: [str('containerName', 1), str('resourceName', 2), str('requestName', 3)] },
  { name: `${CORE}.NodeAllocatableResourceClaimStatus`, fields: [
    str('resourceClaimName', 1), strList('containers', 2),
    msgList('mapping', 4, `${CORE}.NodeAllocatableResourceMapping`), msgList('overhead', 5, `${CORE}.NodeAllocatableResourceOverhead`),
  ] },
  { name: `${CORE}.NodeAllocatableResourceMapping`, fields: [str('name', 1), msgOpt('quantity', 2, QUANTITY)] },
  { name: `${CORE}.NodeAllocatableResourceOverhead`, fields: [str('name', 1), msgOpt('perPod', 2, QUANTITY), msgOpt('perContainer', 3, QUANTITY)] },
  { name: `${CORE}.VolumeHealthStatus`, fields: [
    str('name', 1), msgList('healthConditions', 2, `${CORE}.VolumeHealthCondition`), msgOpt('lastTransitionTime', 3, TIME),
  ] },
  healthCondition(`${CORE}.VolumeHealthCondition`),
  { name: `${CORE}.PersistentVolumeClaimHealthStatus`, fields: [
    msgList('healthConditions', 1, `${CORE}.VolumeHealthCondition`), msgOpt('lastTransitionTime', 2, TIME),
  ] },
  { name: `${CORE}.VolumeStatus`, fields: [msgOpt('image', 1, `${CORE}.ImageVolumeStatus`)] },
  { name: `${CORE}.ImageVolumeStatus`, fields: [str('imageRef', 1)] },
  { name: `${META}.ShardInfo`, fields: [str('selector', 1)] },
  { name: 'k8s.io.api.storage.v1.CSINodeStatus', fields: [msgList('storageHealth', 1, 'k8s.io.api.storage.v1.CSINodeStorageHealth')] },
  { name: 'k8s.io.api.storage.v1.CSINodeStorageHealth', fields: [
    str('name', 1), msgList('healthConditions', 2, 'k8s.io.api.storage.v1.StorageHealthCondition'),
  ] },
  healthCondition('k8s.io.api.storage.v1.StorageHealthCondition', [str('accessMode', 4), str('volumeMode', 5), msgOpt('lastTransitionTime', 6, TIME)]),
  { name: 'k8s.io.api.batch.v1.JobScheduling', fields: [
    msgOpt('schedulingPolicy', 1, 'k8s.io.api.batch.v1.JobSchedulingPolicy'),
    msgOpt('schedulingConstraints', 2, 'k8s.io.api.batch.v1.JobSchedulingConstraints'),
    msgOpt('disruptionMode', 3, 'k8s.io.api.batch.v1.JobDisruptionMode'),
    msgList('resourceClaims', 4, 'k8s.io.api.batch.v1.JobResourceClaim'),
  ] },
  { name: 'k8s.io.api.batch.v1.JobSchedulingPolicy', fields: [
    msgOpt('basic', 1, 'k8s.io.api.batch.v1.JobBasicSchedulingPolicy'), msgOpt('gang', 2, 'k8s.io.api.batch.v1.JobGangSchedulingPolicy'),
  ] },
  { name: 'k8s.io.api.batch.v1.JobBasicSchedulingPolicy', fields: [] },
  { name: 'k8s.io.api.batch.v1.JobGangSchedulingPolicy', fields: [int32Opt('minCount', 1)] },
  { name: 'k8s.io.api.batch.v1.JobSchedulingConstraints', fields: [msgList('topology', 1, 'k8s.io.api.batch.v1.JobTopologyConstraint')] },
  { name: 'k8s.io.api.batch.v1.JobTopologyConstraint', fields: [str('key', 1)] },
  { name: 'k8s.io.api.batch.v1.JobDisruptionMode', fields: [
    msgOpt('single', 1, 'k8s.io.api.batch.v1.JobSingleDisruption'), msgOpt('all', 2, 'k8s.io.api.batch.v1.JobAllDisruption'),
  ] },
  { name: 'k8s.io.api.batch.v1.JobSingleDisruption', fields: [] },
  { name: 'k8s.io.api.batch.v1.JobAllDisruption', fields: [] },
  { name: 'k8s.io.api.batch.v1.JobResourceClaim', fields: [str('name', 1), str('resourceClaimName', 2), str('resourceClaimTemplateName', 3)] },
];
