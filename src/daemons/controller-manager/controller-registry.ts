/**
 * Every controller name the reference lists (plus ours, beyond it), which are on by default,
 * how `--controllers` selects them, and which ones this build implements.
 */
import type { Logger } from 'pino';
import type { ControllerManagerConfig } from '../../flags/controller-manager.js';
import { OUR_CONTROLLER_NAMES } from '../../flags/known-names.js';
import type { RestClient, SharedInformerFactory } from './deps.js';
import type { EventRecorder } from './events.js';

/** The reference's controller names. */
export const REFERENCE_CONTROLLER_NAMES = [
  'attachdetach', 'bootstrapsigner', 'clusterrole-aggregation', 'cronjob', 'csrapproving', 'csrcleaner', 'csrsigning',
  'daemonset', 'deployment', 'disruption', 'endpoint', 'garbagecollector', 'horizontalpodautoscaling', 'job', 'namespace',
  'nodeipam', 'nodelifecycle', 'persistentvolume-binder', 'persistentvolume-expander', 'podgc', 'pv-protection',
  'pvc-protection', 'replicaset', 'replicationcontroller', 'resourcequota', 'route', 'service', 'serviceaccount',
  'serviceaccount-token', 'statefulset', 'tokencleaner', 'ttl',
] as const;

/** What `--controllers` accepts: the reference's names, then ours (Kubernetes has them too). */
export const ALL_CONTROLLER_NAMES = [...REFERENCE_CONTROLLER_NAMES, ...OUR_CONTROLLER_NAMES] as const;

export type ControllerName = (typeof ALL_CONTROLLER_NAMES)[number];

/** Off unless named explicitly. */
export const DISABLED_BY_DEFAULT: ReadonlySet<string> = new Set(['bootstrapsigner', 'tokencleaner']);

/** What a controller gets when it starts. */
export interface ControllerContext {
  client: RestClient;
  informers: SharedInformerFactory;
  config: ControllerManagerConfig;
  log: Logger;
  /** Aborts when the controller manager stops (or loses leadership). */
  signal: AbortSignal;
  /** Event recorder for a reporting component (e.g. "deployment-controller"); none in unit tests. */
  events?: (component: string) => EventRecorder;
  /**
   * The CA bundle this process verifies the API server with (its coreconfig's certificate
   * authority); absent without one. Controllers publishing the cluster CA fall back to it when
   * --root-ca-file is not set, as Kubernetes does.
   */
  apiServerCa?: Buffer;
}

/** A control loop: `run` returns after the context's signal aborted and its workers stopped. */
export interface Controller {
  readonly name: string;
  run(ctx: ControllerContext): Promise<void>;
}

/**
 * Kubernetes' rule: an explicit "-name" disables, an explicit "name" enables, otherwise "*"
 * enables the controllers that are on by default; without "*" nothing else runs.
 */
export function isControllerEnabled(name: string, selection: readonly string[]): boolean {
  let star = false;
  for (const s of selection) {
    if (s === name) return true;
    if (s === `-${name}`) return false;
    if (s === '*') star = true;
  }
  return star && !DISABLED_BY_DEFAULT.has(name);
}

/** Names in the selection that are not controllers (to reject at start). */
export function unknownControllers(selection: readonly string[]): string[] {
  const known = new Set<string>(ALL_CONTROLLER_NAMES);
  return selection.filter((s) => s !== '*' && !known.has(s.startsWith('-') ? s.slice(1) : s));
}

export function enabledControllers(selection: readonly string[]): ControllerName[] {
  return ALL_CONTROLLER_NAMES.filter((n) => isControllerEnabled(n, selection));
}

/** Implemented controllers by name; the others are reported as not implemented at start. */
export type ControllerFactories = Partial<Record<ControllerName, () => Promise<Controller>>>;

export const IMPLEMENTED: ControllerFactories = {
  replicaset: async () => (await import('./controllers/replicaset.js')).newReplicaSetController(),
  replicationcontroller: async () => (await import('./controllers/replicationcontroller.js')).newReplicationControllerController(),
  deployment: async () => (await import('./controllers/deployment.js')).newDeploymentController(),
  endpoint: async () => (await import('./controllers/endpoint.js')).newEndpointController(),
  endpointslice: async () => (await import('./controllers/endpointslice.js')).newEndpointSliceController(),
  namespace: async () => (await import('./controllers/namespace.js')).newNamespaceController(),
  serviceaccount: async () => (await import('./controllers/serviceaccount.js')).newServiceAccountController(),
  'serviceaccount-token': async () => (await import('./controllers/serviceaccount-token.js')).newServiceAccountTokenController(),
  garbagecollector: async () => (await import('./controllers/garbagecollector.js')).newGarbageCollectorController(),
  podgc: async () => (await import('./controllers/podgc.js')).newPodGcController(),
  resourcequota: async () => (await import('./controllers/resourcequota.js')).newResourceQuotaController(),
  'pvc-protection': async () => (await import('./controllers/pvc-protection.js')).newPvcProtectionController(),
  'pv-protection': async () => (await import('./controllers/pv-protection.js')).newPvProtectionController(),
  'persistentvolume-binder': async () => (await import('./controllers/persistentvolume-binder.js')).newPersistentVolumeBinderController(),
  attachdetach: async () => (await import('./controllers/attachdetach.js')).newAttachDetachController(),
  'persistentvolume-expander': async () => (await import('./controllers/persistentvolume-expander.js')).newPersistentVolumeExpanderController(),
  job: async () => (await import('./controllers/job.js')).newJobController(),
  disruption: async () => (await import('./controllers/disruption.js')).newDisruptionController(),
  cronjob: async () => (await import('./controllers/cronjob.js')).newCronJobController(),
  daemonset: async () => (await import('./controllers/daemonset.js')).newDaemonSetController(),
  'root-ca-cert-publisher': async () => (await import('./controllers/root-ca-publisher.js')).newRootCaPublisher(),
  statefulset: async () => (await import('./controllers/statefulset.js')).newStatefulSetController(),
  nodelifecycle: async () => (await import('./controllers/nodelifecycle.js')).newNodeLifecycleController(),
  nodeipam: async () => (await import('./controllers/nodeipam.js')).newNodeIpamController(),
  csrsigning: async () => (await import('./controllers/csrsigning.js')).newCsrSigningController(),
  csrapproving: async () => (await import('./controllers/csrapproving.js')).newCsrApprovingController(),
  csrcleaner: async () => (await import('./controllers/csrcleaner.js')).newCsrCleanerController(),
  ttl: async () => (await import('./controllers/ttl.js')).newTtlController(),
  bootstrapsigner: async () => (await import('./controllers/bootstrapsigner.js')).newBootstrapSigner(),
  tokencleaner: async () => (await import('./controllers/tokencleaner.js')).newTokenCleaner(),
  horizontalpodautoscaling: async () => (await import('./controllers/horizontalpodautoscaling/controller.js')).newHorizontalPodAutoscalingController(),
  'clusterrole-aggregation': async () => (await import('./controllers/clusterrole-aggregation.js')).newClusterRoleAggregationController(),
};
