/**
 * The ClusterView over shared informers: services (indexed by ClusterIP), EndpointSlices
 * (indexed by their service, kubernetes.io/service-name, and by ready address) and namespaces.
 * Lookups read the informers' caches; nothing is copied, so answers follow the watch at once.
 */
import type { KubeObject } from '../../../api/resources/types.js';
import type { SharedInformerFactory } from '../../../client/informer-factory.js';
import type { SharedIndexInformer } from '../../../client/informer.js';
import { canonicalIp, dnsService, sliceEndpoints, type ClusterView, type DnsEndpoint, type DnsService } from './cluster-view.js';

const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
const BY_CLUSTER_IP = 'clusterIP';
const BY_SERVICE = 'service';
const BY_ADDRESS = 'address';

function sliceService(obj: KubeObject): string | undefined {
  const name = obj.metadata?.labels?.[SERVICE_NAME_LABEL];
  return name ? `${obj.metadata?.namespace ?? ''}/${name}` : undefined;
}

export interface InformerView extends ClusterView {
  readonly informers: readonly SharedIndexInformer[];
  /** Called on every change of a watched object (the SOA serial follows it). */
  onChange(f: () => void): void;
}

export function informerView(factory: SharedInformerFactory): InformerView {
  const services = factory.informerFor({ group: '', version: 'v1', resource: 'services' });
  const slices = factory.informerFor({ group: 'discovery.k8s.io', version: 'v1', resource: 'endpointslices' });
  const namespaces = factory.informerFor({ group: '', version: 'v1', resource: 'namespaces' });
  services.addIndexers({ [BY_CLUSTER_IP]: (o) => dnsService(o).clusterIps.map(canonicalIp) });
  slices.addIndexers({
    [BY_SERVICE]: (o) => { const k = sliceService(o); return k ? [k] : []; },
    [BY_ADDRESS]: (o) => (sliceService(o) ? [...new Set(sliceEndpoints(o).map((e) => canonicalIp(e.ip)))] : []),
  });
  const all = [services, slices, namespaces];
  const listeners: Array<() => void> = [];
  const changed = (): void => { for (const f of listeners) f(); };
  for (const inf of all) inf.addEventHandler({ onAdd: changed, onUpdate: changed, onDelete: changed });

  const service = (namespace: string, name: string): DnsService | undefined => {
    const obj = services.indexer.get(namespace, name);
    return obj ? dnsService(obj) : undefined;
  };
  const endpointsOf = (slice: KubeObject[]): DnsEndpoint[] => slice.flatMap((s) => sliceEndpoints(s));
  return {
    informers: all,
    onChange: (f) => { listeners.push(f); },
    synced: () => all.every((i) => i.hasSynced()),
    namespaceExists: (ns) => namespaces.indexer.get(undefined, ns) !== undefined,
    service,
    endpoints: (namespace, name) => endpointsOf(slices.indexer.byIndex(BY_SERVICE, `${namespace}/${name}`)),
    servicesByClusterIp: (ip) => services.indexer.byIndex(BY_CLUSTER_IP, ip).map(dnsService),
    endpointsByIp: (ip) => {
      const out: Array<{ service: DnsService; endpoint: DnsEndpoint }> = [];
      for (const s of slices.indexer.byIndex(BY_ADDRESS, ip)) {
        const [ns, name] = (sliceService(s) ?? '/').split('/') as [string, string];
        const svc = service(ns, name);
        if (!svc) continue;
        for (const e of sliceEndpoints(s)) if (canonicalIp(e.ip) === ip) out.push({ service: svc, endpoint: e });
      }
      return out;
    },
  };
}
