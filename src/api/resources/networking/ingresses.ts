/** networking.k8s.io/v1 Ingress. */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource, statusStrategy } from '../common/define.js';
import { col, arr, rec, str, path } from '../common/table-util.js';
import { isObject } from '../common/validation.js';
import type { KubeObject } from '../types.js';

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
