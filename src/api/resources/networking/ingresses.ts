/** networking.k8s.io/v1 Ingress. */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource, statusStrategy } from '../common/define.js';
import { col, arr, rec, str, path } from '../common/table-util.js';
import { isObject } from '../common/validation.js';
import type { KubeObject } from '../types.js';
import { defineView } from '../common/conversion.js';

const PATH_TYPES = ['Exact', 'ImplementationSpecific', 'Prefix'];

function hosts(o: KubeObject): string {
  const h = arr(path(o, 'spec.rules')).map(rec).map((r) => str(r.host) || '*');
  if (!h.length) return '*';
  return h.length > 4 ? `${h.slice(0, 4).join(',')} + ${h.length - 4} more...` : h.join(',');
}

export const ingresses = defineResource({
  group: 'networking.k8s.io', versions: ['v1'], kind: 'Ingress', plural: 'ingresses', namespaced: true,
  shortNames: ['ing'], hasGeneration: true, subresources: { status: true },
  validateSpec(obj) {
    const errs: FieldError[] = [];
    const spec = rec(obj.spec);
    if (!arr(spec.rules).length && !isObject(spec.defaultBackend)) errs.push(fieldErrors.invalid('spec.rules', [], 'either `defaultBackend` or `rules` must be specified'));
    arr(spec.rules).forEach((r, i) => {
      const http = rec(rec(r).http);
      if (rec(r).http !== undefined && !arr(http.paths).length) errs.push(fieldErrors.required(`spec.rules[${i}].http.paths`));
      arr(http.paths).forEach((p, j) => {
        const pp = rec(p), f = `spec.rules[${i}].http.paths[${j}]`;
        if (!PATH_TYPES.includes(str(pp.pathType))) errs.push(pp.pathType === undefined ? fieldErrors.required(`${f}.pathType`, 'pathType must be specified') : fieldErrors.notSupported(`${f}.pathType`, pp.pathType, PATH_TYPES));
        if ((pp.pathType === 'Exact' || pp.pathType === 'Prefix') && !str(pp.path).startsWith('/')) errs.push(fieldErrors.invalid(`${f}.path`, pp.path ?? '', 'must be an absolute path'));
        if (!isObject(pp.backend)) errs.push(fieldErrors.required(`${f}.backend`));
      });
    });
    return errs;
  },
  prepareForCreate(obj) { obj.status = { loadBalancer: {} }; },
  prepareForUpdate: statusStrategy.prepareForUpdate,
  columns: [
    col('Class', 'string', 'The name of the IngressClass resource.', (o) => str(path(o, 'spec.ingressClassName')) || '<none>'),
    col('Hosts', 'string', 'Hosts that incoming requests are matched against before the ingress rule', hosts),
    col('Address', 'string', 'Address is a list containing ingress points for the load-balancer', (o) => arr(path(o, 'status.loadBalancer.ingress')).map(rec).map((i) => str(i.ip) || str(i.hostname)).join(',')),
    col('Ports', 'string', 'Ports of TLS configurations that open', (o) => arr(path(o, 'spec.tls')).length ? '80, 443' : '80'),
  ],
});

/**
 * extensions/v1beta1 Ingress, served from networking.k8s.io/v1 storage. Renames: spec.backend ↔
 * spec.defaultBackend; backend {serviceName, servicePort} ↔ {service: {name, port: {number|name}}}.
 * pathType defaults to ImplementationSpecific (v1 requires it). Nothing is lost either way.
 */
function backendToV1(b: unknown): unknown {
  if (!isObject(b)) return b;
  const { serviceName, servicePort, ...rest } = b;
  if (serviceName === undefined && servicePort === undefined) return rest;
  const port = typeof servicePort === 'number' ? { number: servicePort } : typeof servicePort === 'string' ? (/^\d+$/.test(servicePort) ? { number: Number(servicePort) } : { name: servicePort }) : undefined;
  return { ...rest, service: { name: serviceName, ...(port ? { port } : {}) } };
}
function backendFromV1(b: unknown): unknown {
  if (!isObject(b)) return b;
  const { service, ...rest } = b;
  if (!isObject(service)) return rest;
  const port = rec(service.port);
  const servicePort = port.number !== undefined ? port.number : port.name;
  return { ...rest, serviceName: service.name, ...(servicePort !== undefined ? { servicePort } : {}) };
}
function mapIngress(o: KubeObject, toV1: boolean): KubeObject {
  const spec = o.spec;
  if (!isObject(spec)) return o;
  const conv = toV1 ? backendToV1 : backendFromV1;
  const [from, to] = toV1 ? ['backend', 'defaultBackend'] : ['defaultBackend', 'backend'];
  if (spec[from] !== undefined) { spec[to] = conv(spec[from]); delete spec[from]; }
  for (const r of arr(spec.rules)) for (const p of arr(rec(rec(r).http).paths)) if (isObject(p) && p.backend !== undefined) p.backend = conv(p.backend);
  return o;
}
export const ingressesExtensionsV1beta1 = defineView({
  group: 'extensions', version: 'v1beta1', base: ingresses,
  toStorage: (o) => mapIngress(o, true),
  fromStorage: (o) => mapIngress(o, false),
  defaults(o) {
    for (const r of arr(path(o, 'spec.rules'))) for (const p of arr(rec(rec(r).http).paths)) if (isObject(p)) p.pathType ??= 'ImplementationSpecific';
  },
});
