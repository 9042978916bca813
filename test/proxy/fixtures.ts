/** Services and EndpointSlices for the proxy's tests. */
import type { EndpointSliceObject, ServiceObject } from '../../src/daemons/proxy/service-model.js';

export function service(name: string, clusterIP: string, spec: Partial<NonNullable<ServiceObject['spec']>> = {}, status?: ServiceObject['status']): ServiceObject {
  return {
    metadata: { name, namespace: 'default' },
    spec: { type: 'ClusterIP', clusterIP, clusterIPs: [clusterIP], ports: [{ name: 'http', port: 80, protocol: 'TCP' }], ...spec },
    ...(status ? { status } : {}),
  };
}

export interface Ep { ip: string; node?: string; ready?: boolean; serving?: boolean; terminating?: boolean }

export function slice(svc: string, eps: Ep[], port = 8080, portName = 'http'): EndpointSliceObject {
  return {
    metadata: { name: `${svc}-abc`, namespace: 'default', labels: { 'kubernetes.io/service-name': svc } },
    addressType: 'IPv4',
    ports: [{ name: portName, port, protocol: 'TCP' }],
    endpoints: eps.map((e) => ({
      addresses: [e.ip], nodeName: e.node ?? 'node-a',
      conditions: { ready: e.ready ?? true, ...(e.serving !== undefined ? { serving: e.serving } : {}), ...(e.terminating !== undefined ? { terminating: e.terminating } : {}) },
    })),
  };
}
