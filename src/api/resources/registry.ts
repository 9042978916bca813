/**
 * Every built-in resource definition. The REST layer, discovery, tables and field selectors
 * look resources up here instead of special-casing kinds.
 */
import type { ResourceDefinition } from './types.js';
import { pods } from './core/pods.js';
import { podtemplates } from './core/podtemplates.js';
import { services } from './core/services.js';
import { replicationcontrollers } from './core/replicationcontrollers.js';
import { namespaces } from './core/namespaces.js';
import { nodes } from './core/nodes.js';
import { endpoints } from './core/endpoints.js';
import { configmaps } from './core/configmaps.js';
import { secrets } from './core/secrets.js';
import { serviceaccounts } from './core/serviceaccounts.js';
import { persistentvolumes } from './core/persistentvolumes.js';
import { persistentvolumeclaims } from './core/persistentvolumeclaims.js';
import { resourcequotas } from './core/resourcequotas.js';
import { limitranges } from './core/limitranges.js';
import { events } from './core/events.js';
import { deployments, deploymentsExtensionsV1beta1 } from './apps/deployments.js';
import { replicasets, replicasetsExtensionsV1beta1 } from './apps/replicasets.js';
import { daemonsets, daemonsetsExtensionsV1beta1 } from './apps/daemonsets.js';
import { statefulsets } from './apps/statefulsets.js';
import { controllerrevisions } from './apps/controllerrevisions.js';
import { jobs } from './batch/jobs.js';
import { cronjobs } from './batch/cronjobs.js';
import { horizontalpodautoscalers } from './autoscaling/horizontalpodautoscalers.js';
import { certificatesigningrequests } from './certificates/certificatesigningrequests.js';
import { storageclasses } from './storage/storageclasses.js';
import { volumeattachments } from './storage/volumeattachments.js';
import { csidrivers } from './storage/csidrivers.js';
import { csinodes } from './storage/csinodes.js';
import { csistoragecapacities } from './storage/csistoragecapacities.js';
import { roles } from './rbac/roles.js';
import { rolebindings } from './rbac/rolebindings.js';
import { clusterroles } from './rbac/clusterroles.js';
import { clusterrolebindings } from './rbac/clusterrolebindings.js';
import { poddisruptionbudgets } from './policy/poddisruptionbudgets.js';
import { leases } from './coordination/leases.js';
import { networkpolicies, networkpoliciesExtensionsV1beta1 } from './networking/networkpolicies.js';
import { ingresses, ingressesExtensionsV1beta1 } from './networking/ingresses.js';
import { ingressclasses } from './networking/ingressclasses.js';
import { priorityclasses } from './scheduling/priorityclasses.js';
import { runtimeclasses } from './node/runtimeclasses.js';
import { eventsV1 } from './events/events.js';
import { customresourcedefinitions } from './apiextensions/customresourcedefinitions.js';
import { endpointslices } from './discovery/endpointslices.js';
import { mutatingwebhookconfigurations } from './admissionregistration/mutatingwebhookconfigurations.js';
import { validatingwebhookconfigurations } from './admissionregistration/validatingwebhookconfigurations.js';
import { apiservices } from './apiregistration/apiservices.js';

const ALL: readonly ResourceDefinition[] = [
  pods, podtemplates, services, replicationcontrollers, namespaces, nodes, endpoints, configmaps, secrets,
  serviceaccounts, persistentvolumes, persistentvolumeclaims, resourcequotas, limitranges, events,
  deployments, replicasets, daemonsets, statefulsets, controllerrevisions,
  jobs, cronjobs, horizontalpodautoscalers, certificatesigningrequests,
  storageclasses, volumeattachments, csidrivers, csinodes, csistoragecapacities, roles, rolebindings, clusterroles, clusterrolebindings,
  poddisruptionbudgets, leases, networkpolicies, ingresses, eventsV1, customresourcedefinitions, endpointslices,
  mutatingwebhookconfigurations, validatingwebhookconfigurations,
  ingressclasses, priorityclasses, runtimeclasses, apiservices,
  // extensions/v1beta1: views onto the apps and networking stores (off unless --runtime-config enables them).
  deploymentsExtensionsV1beta1, daemonsetsExtensionsV1beta1, replicasetsExtensionsV1beta1,
  ingressesExtensionsV1beta1, networkpoliciesExtensionsV1beta1,
];

/** Group names in the order discovery lists them (Kubernetes' priority order). */
export const GROUP_ORDER: readonly string[] = [
  '', 'apiregistration.k8s.io', 'apps', 'events.k8s.io', 'autoscaling', 'batch', 'certificates.k8s.io', 'networking.k8s.io',
  'policy', 'rbac.authorization.k8s.io', 'storage.k8s.io', 'admissionregistration.k8s.io', 'apiextensions.k8s.io',
  'scheduling.k8s.io', 'coordination.k8s.io', 'node.k8s.io', 'discovery.k8s.io',
];

const extra: ResourceDefinition[] = [];
/**
 * findResource's index, group → version → plural → definition, rebuilt after registerResource.
 * Nested maps, because looking up the path's own segments hashes three short strings, where one
 * key built per request would be flattened and hashed whole every time.
 */
let byGvr: Map<string, Map<string, Map<string, ResourceDefinition>>> | undefined;

/** Adds a definition (custom resources, virtual review resources); replaces one with the same group/plural. */
export function registerResource(def: ResourceDefinition): void {
  const i = extra.findIndex((d) => d.group === def.group && d.plural === def.plural);
  if (i >= 0) extra[i] = def; else extra.push(def);
  byGvr = undefined;
}

/** Removes a definition registerResource added (a custom resource whose CRD went away). */
export function unregisterResource(group: string, plural: string): void {
  const i = extra.findIndex((d) => d.group === group && d.plural === plural);
  if (i < 0) return;
  extra.splice(i, 1);
  byGvr = undefined;
}

export function allResources(): readonly ResourceDefinition[] {
  return extra.length ? [...ALL.filter((d) => !extra.some((e) => e.group === d.group && e.plural === d.plural)), ...extra] : ALL;
}

/** The definition serving group/version/plural, or undefined (every request asks: an index, not a scan). */
export function findResource(group: string, version: string, plural: string): ResourceDefinition | undefined {
  if (!byGvr) {
    const index = new Map<string, Map<string, Map<string, ResourceDefinition>>>();
    // The first definition in allResources() order wins, as a scan would find it.
    for (const d of allResources()) for (const v of d.versions) {
      let versions = index.get(d.group);
      if (!versions) index.set(d.group, versions = new Map());
      let plurals = versions.get(v);
      if (!plurals) versions.set(v, plurals = new Map());
      if (!plurals.has(d.plural)) plurals.set(d.plural, d);
    }
    byGvr = index;
  }
  return byGvr.get(group)?.get(version)?.get(plural);
}

/** The definition of a kind in a group (any served version when version is omitted). */
export function findByKind(group: string, kind: string, version?: string): ResourceDefinition | undefined {
  return allResources().find((d) => d.group === group && d.kind === kind && (version === undefined || d.versions.includes(version)));
}
