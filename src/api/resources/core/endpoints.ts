/**
 * core/v1 Endpoints. Addresses are checked as Kubernetes' ValidateEndpoints does: a valid IP,
 * and none that makes no sense as a destination (unspecified, loopback, link-local, link-local
 * multicast; the EndpointSlice rules).
 */
import { isIP } from 'node:net';
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { col, arr, rec, str } from '../common/table-util.js';
import { isObject, pushAll } from '../common/validation.js';
import { endpointIpProblems } from '../discovery/endpointslices.js';
import type { KubeObject } from '../types.js';

function endpointsString(o: KubeObject): string {
  const out: string[] = [];
  let total = 0;
  for (const s of arr(o.subsets).map(rec)) {
    const addrs = arr(s.addresses).map(rec), ports = arr(s.ports).map(rec);
    for (const a of addrs) {
      if (ports.length === 0) { total++; if (out.length < 3) out.push(str(a.ip)); continue; }
      for (const p of ports) { total++; if (out.length < 3) out.push(`${str(a.ip)}:${String(p.port)}`); }
    }
  }
  if (!out.length) return '<none>';
  return total > 3 ? `${out.join(',')} + ${total - 3} more...` : out.join(',');
}

/** An address's ip: required, a valid IP, and not one of the special ranges. */
function validateAddressIp(ip: unknown, field: string, errs: FieldError[]): void {
  if (!str(ip)) { errs.push(fieldErrors.required(field)); return; }
  if (typeof ip !== 'string' || isIP(ip) === 0 || ip.includes('%')) {
    errs.push(fieldErrors.invalid(field, ip, 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'));
    return;
  }
  pushAll(errs, field, ip, endpointIpProblems(ip));
}

export const endpoints = defineResource({
  group: '', versions: ['v1'], kind: 'Endpoints', plural: 'endpoints', namespaced: true,
  shortNames: ['ep'], singular: 'endpoints',
  defaults(obj) {
    for (const s of arr(obj.subsets)) for (const p of arr(rec(s).ports)) if (isObject(p)) p.protocol ??= 'TCP';
  },
  validateSpec(obj) {
    const errs: FieldError[] = [];
    arr(obj.subsets).forEach((s, i) => {
      for (const list of ['addresses', 'notReadyAddresses']) {
        arr(rec(s)[list]).forEach((a, j) => validateAddressIp(rec(a).ip, `subsets[${i}].${list}[${j}].ip`, errs));
      }
      arr(rec(s).ports).forEach((p, j) => {
        const port = rec(p).port;
        if (!Number.isInteger(port) || (port as number) < 1 || (port as number) > 65535) errs.push(fieldErrors.invalid(`subsets[${i}].ports[${j}].port`, port ?? 0, 'must be between 1 and 65535, inclusive'));
      });
    });
    return errs;
  },
  columns: [col('Endpoints', 'string', 'Endpoints of the service', endpointsString)],
});
