/**
 * networking.k8s.io/v1 IngressClass: which controller implements a class of ingresses
 * (`spec.controller`, a domain-prefixed path, fixed once created) and, optionally, the object
 * holding its configuration (`spec.parameters`, cluster-scoped unless it says `Namespace`).
 * Kubernetes validates the whole object again on update.
 */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { col, path, rec, str } from '../common/table-util.js';
import { dns1123Label, dns1123Subdomain, immutable, isObject, pathSegmentName, pushAll } from '../common/validation.js';
import type { KubeObject } from '../types.js';

const MAX_CONTROLLER_LENGTH = 250;
const SCOPES = ['Cluster', 'Namespace'];
/** The characters RFC 3986 allows in an HTTP path. */
const HTTP_PATH = /^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$/;
const HTTP_PATH_TEXT = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+";

const given = (v: unknown): boolean => v !== undefined && v !== null;

/** `acme.io/foo`: a DNS subdomain, '/', then HTTP path characters. */
function domainPrefixedPath(field: string, value: string, errs: FieldError[]): void {
  if (value === '') { errs.push(fieldErrors.required(field)); return; }
  const slash = value.indexOf('/');
  const host = slash < 0 ? '' : value.slice(0, slash), rest = slash < 0 ? '' : value.slice(slash + 1);
  if (host === '' || rest === '') { errs.push(fieldErrors.invalid(field, value, 'must be a domain-prefixed path (such as "acme.io/foo")')); return; }
  pushAll(errs, field, host, dns1123Subdomain(host));
  if (!HTTP_PATH.test(rest)) errs.push(fieldErrors.invalid(field, rest, `Invalid path (regex used for validation is '${HTTP_PATH_TEXT}')`));
}

function validateParameters(p: Record<string, unknown>, field: string, errs: FieldError[]): void {
  if (given(p.apiGroup)) pushAll(errs, `${field}.apiGroup`, p.apiGroup, dns1123Subdomain(String(p.apiGroup)));
  for (const k of ['kind', 'name'] as const) {
    const v = str(p[k]);
    if (v === '') errs.push(fieldErrors.required(`${field}.${k}`, `${k} is required`));
    else pushAll(errs, `${field}.${k}`, v, pathSegmentName(v));
  }
  if (!given(p.scope)) { errs.push(fieldErrors.required(`${field}.scope`)); return; }
  const scope = str(p.scope);
  if (!SCOPES.includes(scope)) { errs.push(fieldErrors.notSupported(`${field}.scope`, p.scope, SCOPES)); return; }
  if (scope === 'Namespace') {
    if (!given(p.namespace)) errs.push(fieldErrors.required(`${field}.namespace`, "`parameters.scope` is set to 'Namespace'"));
    else pushAll(errs, `${field}.namespace`, p.namespace, dns1123Label(String(p.namespace)));
  } else if (given(p.namespace)) {
    errs.push(fieldErrors.forbidden(`${field}.namespace`, "`parameters.scope` is set to 'Cluster'"));
  }
}

function validate(obj: KubeObject, old: KubeObject | undefined): FieldError[] {
  const errs: FieldError[] = [];
  const spec = rec(obj.spec);
  const controller = str(spec.controller);
  if (controller.length > MAX_CONTROLLER_LENGTH) errs.push(fieldErrors.tooLong('spec.controller', MAX_CONTROLLER_LENGTH));
  domainPrefixedPath('spec.controller', controller, errs);
  if (isObject(spec.parameters)) validateParameters(spec.parameters, 'spec.parameters', errs);
  if (old) immutable(errs, 'spec.controller', spec.controller, path(old, 'spec.controller'));
  return errs;
}

/** PARAMETERS as kubectl shows it: Kind[.apiGroup]/name. */
function parameters(o: KubeObject): string {
  const p = path(o, 'spec.parameters');
  if (!isObject(p)) return '<none>';
  return `${str(p.kind)}${given(p.apiGroup) ? `.${str(p.apiGroup)}` : ''}/${str(p.name)}`;
}

export const ingressclasses = defineResource({
  group: 'networking.k8s.io', versions: ['v1'], kind: 'IngressClass', plural: 'ingressclasses', namespaced: false,
  hasGeneration: true,
  defaults(obj) {
    const p = path(obj, 'spec.parameters');
    if (isObject(p) && !given(p.scope)) p.scope = 'Cluster';
  },
  validateSpec: validate,
  columns: [
    col('Controller', 'string', 'Controller that is responsible for handling this class', (o) => str(path(o, 'spec.controller'))),
    col('Parameters', 'string', 'A reference to a resource with additional parameters', parameters),
  ],
});
