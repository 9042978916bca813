/** core/v1 Service. Cluster IPs and node ports are allocated by the registry (ip/port allocators). */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource, statusStrategy } from '../common/define.js';
import { col, str, arr, rec, path } from '../common/table-util.js';
import { dns1035Label, dns1123Label, isObject, pushAll, validateLabels } from '../common/validation.js';
import type { KubeObject } from '../types.js';

const TYPES = ['ClusterIP', 'ExternalName', 'LoadBalancer', 'NodePort'];
const PROTOCOLS = ['SCTP', 'TCP', 'UDP'];

function externalIP(o: KubeObject): string {
  const spec = rec(o.spec);
  const ext = arr(spec.externalIPs).map(String);
  switch (spec.type) {
    case 'ClusterIP': case 'NodePort': case undefined:
      return ext.length ? ext.join(',') : '<none>';
    case 'LoadBalancer': {
      const ing = arr(path(o, 'status.loadBalancer.ingress')).map(rec).map((i) => str(i.ip) || str(i.hostname)).filter(Boolean);
      const all = [...ing, ...ext];
      return all.length ? all.join(',') : '<pending>';
    }
    case 'ExternalName': return str(spec.externalName);
    default: return '<unknown>';
  }
}

function portsString(o: KubeObject): string {
  const ports = arr(rec(o.spec).ports).map(rec);
  if (!ports.length) return '<none>';
  return ports.map((p) => p.nodePort ? `${String(p.port)}:${String(p.nodePort)}/${str(p.protocol, 'TCP')}` : `${String(p.port)}/${str(p.protocol, 'TCP')}`).join(',');
}

function selectorString(o: KubeObject): string {
  const sel = rec(rec(o.spec).selector);
  const keys = Object.keys(sel).sort();
  return keys.length ? keys.map((k) => `${k}=${String(sel[k])}`).join(',') : '<none>';
}

function validateService(obj: KubeObject, old?: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  const spec = obj.spec;
  if (!isObject(spec)) { errs.push(fieldErrors.required('spec')); return errs; }
  const type = str(spec.type, 'ClusterIP');
  if (!TYPES.includes(type)) errs.push(fieldErrors.notSupported('spec.type', spec.type, TYPES));
  const headless = spec.clusterIP === 'None';
  const ports = spec.ports;
  if (type === 'ExternalName') {
    if (typeof spec.externalName !== 'string' || !spec.externalName) errs.push(fieldErrors.required('spec.externalName'));
    if (spec.clusterIP && spec.clusterIP !== '') errs.push(fieldErrors.forbidden('spec.clusterIP', 'may not be set for ExternalName services'));
  } else if (!headless && (!Array.isArray(ports) || ports.length === 0)) {
    errs.push(fieldErrors.required('spec.ports'));
  }
  if (ports !== undefined && !Array.isArray(ports)) errs.push(fieldErrors.typeInvalid('spec.ports', ports, 'must be a list'));
  if (Array.isArray(ports)) {
    const names = new Set<string>(), keys = new Set<string>();
    ports.forEach((p: unknown, i: number) => {
      const f = `spec.ports[${i}]`;
      if (!isObject(p)) { errs.push(fieldErrors.typeInvalid(f, p, 'must be an object')); return; }
      if (ports.length > 1 && (typeof p.name !== 'string' || p.name === '')) errs.push(fieldErrors.required(`${f}.name`));
      if (typeof p.name === 'string' && p.name !== '') {
        // A DNS-1123 label, as Kubernetes' validateServicePort ("5678-8080", kubectl's name for
        // --tcp=5678:8080, starts with a digit).
        pushAll(errs, `${f}.name`, p.name, dns1123Label(p.name));
        if (names.has(p.name)) errs.push(fieldErrors.duplicate(`${f}.name`, p.name));
        names.add(p.name);
      }
      if (!Number.isInteger(p.port) || (p.port as number) < 1 || (p.port as number) > 65535) errs.push(fieldErrors.invalid(`${f}.port`, p.port ?? 0, 'must be between 1 and 65535, inclusive'));
      if (p.protocol !== undefined && !PROTOCOLS.includes(String(p.protocol))) errs.push(fieldErrors.notSupported(`${f}.protocol`, p.protocol, PROTOCOLS));
      if (typeof p.targetPort === 'number' && (p.targetPort < 1 || p.targetPort > 65535)) errs.push(fieldErrors.invalid(`${f}.targetPort`, p.targetPort, 'must be between 1 and 65535, inclusive'));
      if (p.nodePort !== undefined && p.nodePort !== 0 && type !== 'NodePort' && type !== 'LoadBalancer') errs.push(fieldErrors.forbidden(`${f}.nodePort`, 'may not be used when `type` is \'ClusterIP\''));
      const key = `${String(p.port)}/${str(p.protocol, 'TCP')}`;
      if (keys.has(key)) errs.push(fieldErrors.duplicate(f, { port: p.port, protocol: str(p.protocol, 'TCP') }));
      keys.add(key);
    });
  }
  if (spec.selector !== undefined) validateLabels(spec.selector, 'spec.selector', errs);
  if (spec.sessionAffinity !== undefined && !['ClientIP', 'None'].includes(String(spec.sessionAffinity))) errs.push(fieldErrors.notSupported('spec.sessionAffinity', spec.sessionAffinity, ['ClientIP', 'None']));
  if (old) {
    const os = rec(old.spec);
    const oldType = str(os.type, 'ClusterIP');
    if (oldType !== 'ExternalName' && type !== 'ExternalName' && os.clusterIP && spec.clusterIP !== undefined && spec.clusterIP !== '' && spec.clusterIP !== os.clusterIP) {
      errs.push(fieldErrors.invalid('spec.clusterIPs[0]', spec.clusterIP, 'may not change once set'));
    }
  }
  return errs;
}

export const services = defineResource({
  group: '', versions: ['v1'], kind: 'Service', plural: 'services', namespaced: true,
  shortNames: ['svc'], categories: ['all'],
  nameValidator: dns1035Label,
  subresources: {
    status: true,
    extra: [{ name: 'proxy', verbs: ['create', 'delete', 'get', 'patch', 'update'], kind: { group: '', version: 'v1', kind: 'ServiceProxyOptions' } }],
  },
  defaults(obj) {
    const spec = obj.spec;
    if (!isObject(spec)) return;
    spec.type ??= 'ClusterIP';
    spec.sessionAffinity ??= 'None';
    if (spec.type !== 'ExternalName') spec.internalTrafficPolicy ??= 'Cluster';
    if (spec.type === 'NodePort' || spec.type === 'LoadBalancer') spec.externalTrafficPolicy ??= 'Cluster';
    if (spec.type === 'LoadBalancer') spec.allocateLoadBalancerNodePorts ??= true;
    if (spec.sessionAffinity === 'ClientIP') {
      spec.sessionAffinityConfig ??= {};
      const c = rec(spec.sessionAffinityConfig);
      c.clientIP ??= {};
      rec(c.clientIP).timeoutSeconds ??= 10800;
    }
    if (Array.isArray(spec.ports)) for (const p of spec.ports) {
      if (!isObject(p)) continue;
      p.protocol ??= 'TCP';
      if (p.targetPort === undefined || p.targetPort === 0 || p.targetPort === '') p.targetPort = p.port;
    }
  },
  validateSpec: validateService,
  prepareForCreate(obj) { obj.status = { loadBalancer: {} }; },
  prepareForUpdate: statusStrategy.prepareForUpdate,
  columns: [
    col('Type', 'string', 'type determines how the Service is exposed.', (o) => str(path(o, 'spec.type'), 'ClusterIP')),
    col('Cluster-IP', 'string', 'clusterIP is the IP address of the service and is usually assigned randomly.', (o) => str(path(o, 'spec.clusterIP')) || '<none>'),
    col('External-IP', 'string', 'externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.', externalIP),
    col('Port(s)', 'string', 'The list of ports that are exposed by this service.', portsString),
  ],
  wideColumns: [col('Selector', 'string', 'Route service traffic to pods with label keys and values matching this selector.', selectorString, 1)],
});
