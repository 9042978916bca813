/**
 * discovery.k8s.io/v1 EndpointSlice: a subset of the endpoints behind a service, grouped by
 * address type and port set. Validation follows Kubernetes' discovery validation (limits,
 * address checks per addressType, messages and field paths); the
 * `endpointslice.kubernetes.io/managed-by` and `kubernetes.io/service-name` labels are
 * ordinary labels to the API (only the controllers give them meaning).
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { arr, col, rec, str } from '../common/table-util.js';
import { deepEqual, dns1123Label, dns1123Subdomain, immutable, isObject, labelValue, pushAll, qualifiedName } from '../common/validation.js';
import type { KubeObject } from '../types.js';

const ADDRESS_TYPES = ['FQDN', 'IPv4', 'IPv6'];
const PROTOCOLS = ['SCTP', 'TCP', 'UDP'];
const MAX_ENDPOINTS = 1000;
const MAX_ADDRESSES = 100;
const MAX_PORTS = 20000;
const MAX_ZONE_HINTS = 8;
const MAX_NODE_HINTS = 8;

/** Well-known labels of slices. */
export const LABEL_SERVICE_NAME = 'kubernetes.io/service-name';
export const LABEL_MANAGED_BY = 'endpointslice.kubernetes.io/managed-by';

/** Kubernetes' TooMany field error (status.ts has no builder for it). */
function tooMany(field: string, actual: number, max: number): FieldError {
  return { field, type: 'FieldValueTooMany', message: `Too many: ${actual}: must have at most ${max} ${max === 1 ? 'item' : 'items'}` };
}

function subnets(list: Array<[string, number, 'ipv4' | 'ipv6']>): BlockList {
  const b = new BlockList();
  for (const [net, prefix, family] of list) b.addSubnet(net, prefix, family);
  return b;
}
// BlockList matches IPv4-mapped IPv6 addresses against IPv4 rules, as Go's net.IP does.
const V4_MAPPED = subnets([['::ffff:0:0', 96, 'ipv6']]);
const UNSPECIFIED = subnets([['0.0.0.0', 32, 'ipv4'], ['::', 128, 'ipv6']]);
const LOOPBACK = subnets([['127.0.0.0', 8, 'ipv4'], ['::1', 128, 'ipv6']]);
const LINK_LOCAL = subnets([['169.254.0.0', 16, 'ipv4'], ['fe80::', 10, 'ipv6']]);
// Go's IsLinkLocalMulticast: 224.0.0.0/24, and ff02::/16 whatever the flag bits (ffX2::).
const LINK_LOCAL_MULTICAST = subnets([['224.0.0.0', 24, 'ipv4'], ...Array.from({ length: 16 }, (_, i): [string, number, 'ipv6'] => [`ff${i.toString(16)}2::`, 16, 'ipv6'])]);

/** IPv4, or IPv4-mapped IPv6 (Go's To4() != nil). */
function isV4(a: string): boolean {
  return isIPv4(a) || (isIPv6(a) && !a.includes('%') && V4_MAPPED.check(a, 'ipv6'));
}
function isV6(a: string): boolean {
  return isIPv6(a) && !a.includes('%') && !V4_MAPPED.check(a, 'ipv6');
}

/**
 * Kubernetes' ValidateEndpointIP: addresses that make no sense as a destination (unspecified,
 * loopback, link-local) are refused. The API server's own `kubernetes` slice leaves such an
 * advertise address out, so it calls this too.
 */
export function endpointIpProblems(a: string): string[] {
  const family = isIPv4(a) ? 'ipv4' : isIPv6(a) && !a.includes('%') ? 'ipv6' : undefined;
  if (!family) return ['must be a valid IP address'];
  const out: string[] = [];
  if (UNSPECIFIED.check(a, family)) out.push(`may not be unspecified (${a})`);
  if (LOOPBACK.check(a, family)) out.push('may not be in the loopback range (127.0.0.0/8, ::1/128)');
  if (LINK_LOCAL.check(a, family)) out.push('may not be in the link-local range (169.254.0.0/16, fe80::/10)');
  if (LINK_LOCAL_MULTICAST.check(a, family)) out.push('may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)');
  return out;
}

/** apimachinery's IsFullyQualifiedDomainName: at most one error, as it returns. */
function fqdnError(field: string, name: string): FieldError | undefined {
  if (name === '') return fieldErrors.required(field);
  const n = name.endsWith('.') ? name.slice(0, -1) : name;
  const sub = dns1123Subdomain(n);
  if (sub.length) return fieldErrors.invalid(field, n, sub.join(','));
  const labels = n.split('.');
  if (labels.length < 2) return fieldErrors.invalid(field, n, 'should be a domain with at least two segments separated by dots');
  for (const l of labels) {
    const e = dns1123Label(l);
    if (e.length) return fieldErrors.invalid(field, l, e.join(','));
  }
  return undefined;
}

function validateAddress(addressType: unknown, a: unknown, field: string, errs: FieldError[]): void {
  if (typeof a !== 'string') { errs.push(fieldErrors.typeInvalid(field, a, 'must be a string')); return; }
  // Unknown address types were already reported; their addresses are not checked.
  switch (addressType) {
    case 'IPv4':
      if (!isV4(a)) errs.push(fieldErrors.invalid(field, a, 'must be a valid IPv4 address'));
      pushAll(errs, field, a, endpointIpProblems(a));
      break;
    case 'IPv6':
      if (!isV6(a)) errs.push(fieldErrors.invalid(field, a, 'must be a valid IPv6 address'));
      pushAll(errs, field, a, endpointIpProblems(a));
      break;
    case 'FQDN': {
      const e = fqdnError(field, a);
      if (e) errs.push(e);
      break;
    }
  }
}

function validateHints(hints: unknown, field: string, errs: FieldError[]): void {
  if (!isObject(hints)) return;
  const zones = arr(hints.forZones);
  if (zones.length > MAX_ZONE_HINTS) { errs.push(tooMany(`${field}.forZones`, zones.length, MAX_ZONE_HINTS)); return; }
  const seenZones = new Set<string>();
  zones.forEach((z, i) => {
    const f = `${field}.forZones[${i}].name`, name = str(rec(z).name);
    if (seenZones.has(name)) errs.push(fieldErrors.duplicate(f, name)); else seenZones.add(name);
    pushAll(errs, f, name, labelValue(name));
  });
  const nodes = arr(hints.forNodes);
  if (nodes.length > MAX_NODE_HINTS) { errs.push(tooMany(`${field}.forNodes`, nodes.length, MAX_NODE_HINTS)); return; }
  const seenNodes = new Set<string>();
  nodes.forEach((n, i) => {
    const f = `${field}.forNodes[${i}].name`, name = str(rec(n).name);
    if (seenNodes.has(name)) errs.push(fieldErrors.duplicate(f, name)); else seenNodes.add(name);
    pushAll(errs, f, name, dns1123Subdomain(name));
  });
}

function validateEndpoints(obj: KubeObject, errs: FieldError[]): void {
  const endpoints = arr(obj.endpoints);
  if (endpoints.length > MAX_ENDPOINTS) { errs.push(tooMany('endpoints', endpoints.length, MAX_ENDPOINTS)); return; }
  endpoints.forEach((raw, i) => {
    const ep = rec(raw), at = `endpoints[${i}]`;
    const addresses = arr(ep.addresses);
    if (addresses.length === 0) errs.push(fieldErrors.required(`${at}.addresses`, 'must contain at least 1 address'));
    else if (addresses.length > MAX_ADDRESSES) errs.push(tooMany(`${at}.addresses`, addresses.length, MAX_ADDRESSES));
    addresses.forEach((a, j) => validateAddress(obj.addressType, a, `${at}.addresses[${j}]`, errs));
    if (typeof ep.nodeName === 'string') pushAll(errs, `${at}.nodeName`, ep.nodeName, dns1123Subdomain(ep.nodeName));
    if (typeof ep.hostname === 'string') pushAll(errs, `${at}.hostname`, ep.hostname, dns1123Label(ep.hostname));
    validateHints(ep.hints, `${at}.hints`, errs);
  });
}

function validatePorts(obj: KubeObject, errs: FieldError[]): void {
  const ports = arr(obj.ports);
  if (ports.length > MAX_PORTS) { errs.push(tooMany('ports', ports.length, MAX_PORTS)); return; }
  const names = new Set<string>();
  ports.forEach((raw, i) => {
    const p = rec(raw), at = `ports[${i}]`;
    const name = str(p.name);
    if (name !== '') pushAll(errs, `${at}.name`, name, dns1123Label(name));
    if (names.has(name)) errs.push(fieldErrors.duplicate(`${at}.name`, name)); else names.add(name);
    if (p.protocol === undefined || p.protocol === null) errs.push(fieldErrors.required(`${at}.protocol`));
    else if (!PROTOCOLS.includes(String(p.protocol))) errs.push(fieldErrors.notSupported(`${at}.protocol`, p.protocol, PROTOCOLS));
    if (typeof p.appProtocol === 'string') pushAll(errs, `${at}.appProtocol`, p.appProtocol, qualifiedName(p.appProtocol));
  });
}

function validateSlice(obj: KubeObject, old?: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  if (obj.addressType === undefined || obj.addressType === null || obj.addressType === '') errs.push(fieldErrors.required('addressType'));
  else if (!ADDRESS_TYPES.includes(String(obj.addressType))) errs.push(fieldErrors.notSupported('addressType', obj.addressType, ADDRESS_TYPES));
  validateEndpoints(obj, errs);
  validatePorts(obj, errs);
  if (old) immutable(errs, 'addressType', obj.addressType, old.addressType);
  return errs;
}

/** v1 writes never keep the deprecated topology map (Kubernetes clears it silently). */
function dropDeprecatedTopology(obj: KubeObject): void {
  for (const ep of arr(obj.endpoints)) if (isObject(ep)) delete ep.deprecatedTopology;
}

/** kubectl's list cell: the first three values, "+ N more..." beyond, "<unset>" when empty. */
function listWithMore(values: string[]): string {
  if (values.length > 3) return `${values.slice(0, 3).join(',')} + ${values.length - 3} more...`;
  return values.length ? values.join(',') : '<unset>';
}

function portsCell(o: KubeObject): string {
  return listWithMore(arr(o.ports).map(rec).map((p) => (typeof p.port === 'number' ? String(p.port) : typeof p.name === 'string' ? p.name : '*')));
}

function endpointsCell(o: KubeObject): string {
  return listWithMore(arr(o.endpoints).flatMap((e) => arr(rec(e).addresses).map((a) => str(a))));
}

export const endpointslices = defineResource({
  group: 'discovery.k8s.io', versions: ['v1'], kind: 'EndpointSlice', plural: 'endpointslices', namespaced: true,
  // Generation counts changes of everything but metadata, as Kubernetes' strategy does
  // (Kubernetes also counts label changes).
  hasGeneration: true,
  defaults(obj) {
    for (const p of arr(obj.ports)) {
      if (!isObject(p)) continue;
      p.name ??= '';
      p.protocol ??= 'TCP';
    }
  },
  prepareForCreate: dropDeprecatedTopology,
  prepareForUpdate(obj, old) {
    // An update that leaves the endpoints as they were keeps them as they were.
    if (!deepEqual(obj.endpoints, old.endpoints)) dropDeprecatedTopology(obj);
  },
  validateSpec: validateSlice,
  columns: [
    col('AddressType', 'string', 'The type of address carried by this EndpointSlice (IPv4, IPv6 or FQDN); immutable.', (o) => str(o.addressType)),
    col('Ports', 'string', 'The network ports exposed by each endpoint in this slice.', portsCell),
    col('Endpoints', 'string', 'The unique endpoints in this slice.', endpointsCell),
  ],
});
