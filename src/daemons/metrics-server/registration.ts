/**
 * Makes the API server send metrics.k8s.io to this metrics server, as metrics-server's
 * manifests do (k3s applies the same): the selector-less Service kube-system/metrics-server
 * with an Endpoints object naming this server's address and port, the APIService
 * v1beta1.metrics.k8s.io pointing at that Service with the serving CA as caBundle, and the
 * ClusterRole system:aggregated-metrics-reader, aggregated into view, edit and admin. Written
 * by server-side apply (field manager `metrics-server`), so a restart on another address or
 * certificate takes over the objects.
 */
import type { RestClient } from '../../client/rest-client.js';
import { GROUP, VERSION } from './api.js';

export const SERVICE_NAMESPACE = 'kube-system';
export const SERVICE_NAME = 'metrics-server';

export interface Registration { address: string; port: number; caPem: string }

export async function registerApiService(client: RestClient, r: Registration): Promise<void> {
  const apply = { fieldManager: 'metrics-server', force: true } as const;
  const labels = { 'k8s-app': 'metrics-server' };
  await client.patch({ group: '', version: 'v1', resource: 'services', namespace: SERVICE_NAMESPACE }, SERVICE_NAME, 'apply', {
    apiVersion: 'v1', kind: 'Service', metadata: { name: SERVICE_NAME, namespace: SERVICE_NAMESPACE, labels },
    spec: { ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: r.port }] },
  }, apply);
  await client.patch({ group: '', version: 'v1', resource: 'endpoints', namespace: SERVICE_NAMESPACE }, SERVICE_NAME, 'apply', {
    apiVersion: 'v1', kind: 'Endpoints', metadata: { name: SERVICE_NAME, namespace: SERVICE_NAMESPACE, labels },
    subsets: [{ addresses: [{ ip: r.address }], ports: [{ name: 'https', port: r.port, protocol: 'TCP' }] }],
  }, apply);
  await client.patch({ group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles' }, 'system:aggregated-metrics-reader', 'apply', {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole',
    metadata: { name: 'system:aggregated-metrics-reader', labels: {
      ...labels, 'rbac.authorization.k8s.io/aggregate-to-admin': 'true', 'rbac.authorization.k8s.io/aggregate-to-edit': 'true', 'rbac.authorization.k8s.io/aggregate-to-view': 'true',
    } },
    rules: [{ apiGroups: [GROUP], resources: ['pods', 'nodes'], verbs: ['get', 'list', 'watch'] }],
  }, apply);
  await client.patch({ group: 'apiregistration.k8s.io', version: 'v1', resource: 'apiservices' }, `${VERSION}.${GROUP}`, 'apply', {
    apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService', metadata: { name: `${VERSION}.${GROUP}`, labels },
    spec: {
      group: GROUP, version: VERSION, groupPriorityMinimum: 100, versionPriority: 100,
      service: { namespace: SERVICE_NAMESPACE, name: SERVICE_NAME, port: 443 }, caBundle: Buffer.from(r.caPem).toString('base64'),
    },
  }, apply);
}
