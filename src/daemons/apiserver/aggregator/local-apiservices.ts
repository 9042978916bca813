/**
 * The local APIServices, as Kubernetes' autoregister controller keeps them: one per group/version
 * this API server serves itself (`v1.`, `v1.apps`, ... and the custom resources' groups), with
 * the group priorities Kubernetes gives the built-in groups, so `kubectl get apiservices`
 * lists them. Ours carry the label kube-aggregator.kubernetes.io/automanaged; such an object
 * whose group/version is no longer served (a CRD went away) is deleted, others are left alone.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import { apiservices } from '../../../api/resources/apiregistration/apiservices.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { ResourceRegistry } from '../registry/resource-registry.js';

export const AUTOMANAGED_LABEL = 'kube-aggregator.kubernetes.io/automanaged';

/** Kubernetes' priorities for the built-in groups (group minimum, version priority); others 1000/100 as for CRDs. */
const PRIORITIES: Readonly<Record<string, readonly [number, number]>> = {
  '': [18000, 1], 'apiregistration.k8s.io': [18000, 15], 'apps': [17800, 15], 'events.k8s.io': [17750, 15],
  'authentication.k8s.io': [17700, 15], 'authorization.k8s.io': [17600, 15], 'autoscaling': [17500, 15],
  'batch': [17400, 15], 'certificates.k8s.io': [17300, 15], 'networking.k8s.io': [17200, 15], 'policy': [17100, 15],
  'rbac.authorization.k8s.io': [17000, 15], 'storage.k8s.io': [16800, 15], 'apiextensions.k8s.io': [16700, 15],
  'admissionregistration.k8s.io': [16700, 15], 'scheduling.k8s.io': [16600, 15], 'coordination.k8s.io': [16500, 15],
  'node.k8s.io': [16300, 15], 'discovery.k8s.io': [16200, 15], 'flowcontrol.apiserver.k8s.io': [16100, 15],
  'extensions': [17900, 1],
};

export function apiServiceName(group: string, version: string): string {
  return `${version}.${group}`;
}

/** The local APIService object for a group/version (versions listed later get lower priorities). */
export function localApiService(group: string, version: string, index: number): KubeObject {
  const [gpm, vp] = PRIORITIES[group] ?? [1000, 100];
  return {
    apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService',
    metadata: { name: apiServiceName(group, version), labels: { [AUTOMANAGED_LABEL]: 'onstart' } },
    spec: { group, version, groupPriorityMinimum: gpm, versionPriority: Math.max(1, vp - index * 3) },
  };
}

/**
 * Creates missing local APIServices for `served` (group → versions, preferred first) and
 * deletes automanaged ones no longer served. `existing` is the current set by name.
 */
export async function reconcileLocalApiServices(registry: ResourceRegistry, served: ReadonlyArray<{ name: string; versions: readonly string[] }>,
  existing: ReadonlyMap<string, KubeObject>, log: Logger): Promise<void> {
  const wanted = new Set<string>();
  const creates: Promise<unknown>[] = [];
  for (const g of served) {
    g.versions.forEach((v, i) => {
      const name = apiServiceName(g.name, v);
      wanted.add(name);
      if (existing.has(name)) return;
      creates.push(registry.create(apiservices, localApiService(g.name, v, i)).catch((e: unknown) => {
        if (!isApiError(e, 'AlreadyExists')) log.warn({ err: (e as Error).message, name }, 'cannot create local APIService');
      }));
    });
  }
  await Promise.all(creates);
  for (const [name, o] of existing) {
    if (wanted.has(name) || !o.metadata?.labels?.[AUTOMANAGED_LABEL]) continue;
    const spec = (o.spec ?? {}) as Record<string, unknown>;
    if (spec.service) continue;
    await registry.delete(apiservices, '', name).catch((e: unknown) => {
      if (!isApiError(e, 'NotFound')) log.warn({ err: (e as Error).message, name }, 'cannot delete local APIService');
    });
  }
}
