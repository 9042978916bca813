/**
 * The EndpointSlice named `kubernetes` in `default`, kept next to the `kubernetes` Endpoints
 * as Kubernetes' endpoint reconciler does: addressType of the service IP's family, one ready
 * endpoint per API server address of that family, the `https` port, and only the
 * `kubernetes.io/service-name` label (no managed-by: no controller owns it).
 *
 * An address the EndpointSlice API refuses as a destination (loopback, link-local,
 * unspecified: a server advertising 127.0.0.1) is left out, so the slice stays valid and
 * present with the addresses that are usable.
 */
import { isIPv6 } from 'node:net';
import { isApiError } from '../../../api/meta/status.js';
import { deepEqual } from '../../../api/resources/common/validation.js';
import { endpointIpProblems, endpointslices, LABEL_SERVICE_NAME } from '../../../api/resources/discovery/endpointslices.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { ResourceRegistry } from './resource-registry.js';

const NAMESPACE = 'default';
const NAME = 'kubernetes';

export async function writeKubernetesEndpointSlice(registry: ResourceRegistry, serviceIp: string, addresses: readonly string[], securePort: number): Promise<void> {
  const addressType = isIPv6(serviceIp) ? 'IPv6' : 'IPv4';
  const usable = [...new Set(addresses)].filter((a) => isIPv6(a) === (addressType === 'IPv6') && endpointIpProblems(a).length === 0).sort();
  const want = {
    labels: { [LABEL_SERVICE_NAME]: NAME },
    endpoints: usable.map((ip) => ({ addresses: [ip], conditions: { ready: true } })),
    ports: [{ name: 'https', port: securePort, protocol: 'TCP' }],
  };
  let current: KubeObject | undefined;
  try { current = await registry.get(endpointslices, NAMESPACE, NAME); } catch (e) { if (!isApiError(e, 'NotFound')) throw e; }
  if (current && current.addressType !== addressType) {
    // addressType is immutable: a slice of the other family is replaced.
    await registry.delete(endpointslices, NAMESPACE, NAME, { preconditions: { uid: current.metadata?.uid ?? '' } });
    current = undefined;
  }
  if (current && deepEqual([current.metadata?.labels, current.endpoints ?? [], current.ports ?? []], [want.labels, want.endpoints, want.ports])) return;
  await registry.update(endpointslices, NAMESPACE, NAME, (cur) => {
    const o: KubeObject = cur ?? { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: NAME, namespace: NAMESPACE }, addressType };
    o.metadata = { ...(o.metadata ?? {}), labels: want.labels };
    delete o.metadata.resourceVersion;
    o.endpoints = want.endpoints;
    o.ports = want.ports;
    return o;
  }, { internal: true, allowCreate: true });
}
