/**
 * apiregistration.k8s.io/v1 APIService: who serves one API group/version. Without `service` it
 * is served by this API server (a "local" APIService; the API server keeps one per built-in
 * group/version); with one, the aggregator (src/daemons/apiserver/aggregator/) proxies the
 * group/version to that service. The name is `<version>.<group>` (`v1.` for the core group).
 * The aggregator's availability check writes status.conditions (type Available).
 */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource, statusStrategy } from '../common/define.js';
import { arr, col, path, rec, str } from '../common/table-util.js';
import { dns1035Label, dns1123Label, dns1123Subdomain, isObject, pushAll } from '../common/validation.js';
import type { KubeObject } from '../types.js';

/** "Local", or the service's namespace/name (kubectl's SERVICE column). */
export function apiServiceServiceText(o: KubeObject): string {
  const svc = path(o, 'spec.service');
  if (!isObject(svc)) return 'Local';
  return `${str(svc.namespace)}/${str(svc.name)}`;
}

/** "True", or "False (Reason)" as Kubernetes' printer shows the Available condition. */
function availableText(o: KubeObject): string {
  const c = arr(path(o, 'status.conditions')).map(rec).find((x) => x.type === 'Available');
  if (!c) return 'Unknown';
  const status = str(c.status);
  return status === 'True' || !str(c.reason) ? status : `${status} (${str(c.reason)})`;
}

function validateSpec(obj: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  const spec = rec(obj.spec);
  const group = str(spec.group);
  const version = str(spec.version);
  const name = obj.metadata?.name ?? '';
  const wanted = `${version}.${group}`;
  if (name !== wanted) errs.push(fieldErrors.invalid('metadata.name', name, `must be ${JSON.stringify(wanted)}: "<version>.<group>"`));
  if (group !== '') pushAll(errs, 'spec.group', group, dns1123Subdomain(group));
  if (!version) errs.push(fieldErrors.required('spec.version', ''));
  else pushAll(errs, 'spec.version', version, dns1035Label(version));
  const gpm = spec.groupPriorityMinimum;
  if (!Number.isInteger(gpm) || (gpm as number) <= 0 || (gpm as number) > 20000) errs.push(fieldErrors.invalid('spec.groupPriorityMinimum', gpm, 'must be positive and less than 20000'));
  const vp = spec.versionPriority;
  if (!Number.isInteger(vp) || (vp as number) <= 0 || (vp as number) > 1000) errs.push(fieldErrors.invalid('spec.versionPriority', vp, 'must be positive and less than 1000'));
  const svc = spec.service;
  const insecure = spec.insecureSkipTLSVerify === true;
  const caBundle = str(spec.caBundle);
  if (!isObject(svc)) {
    if (insecure) errs.push(fieldErrors.invalid('spec.insecureSkipTLSVerify', true, 'must not be set if service is not set'));
    if (caBundle) errs.push(fieldErrors.invalid('spec.caBundle', caBundle, 'must not be set if service is not set'));
  } else {
    if (!str(svc.namespace)) errs.push(fieldErrors.required('spec.service.namespace', ''));
    else pushAll(errs, 'spec.service.namespace', svc.namespace, dns1123Label(str(svc.namespace)));
    if (!str(svc.name)) errs.push(fieldErrors.required('spec.service.name', ''));
    else pushAll(errs, 'spec.service.name', svc.name, dns1035Label(str(svc.name)));
    if (svc.port !== undefined && (!Number.isInteger(svc.port) || (svc.port as number) < 1 || (svc.port as number) > 65535)) {
      errs.push(fieldErrors.invalid('spec.service.port', svc.port, 'port is not valid: must be between 1 and 65535, inclusive'));
    }
    if (insecure && caBundle) errs.push(fieldErrors.invalid('spec.insecureSkipTLSVerify', true, 'may not be true if caBundle is present'));
  }
  return errs;
}

export const apiservices = defineResource({
  group: 'apiregistration.k8s.io', versions: ['v1'], kind: 'APIService', plural: 'apiservices', namespaced: false,
  categories: ['api-extensions'],
  subresources: { status: true },
  ...statusStrategy,
  // The name is "<version>.<group>": dots and the trailing one of "v1." are allowed.
  nameValidator: (v) => (v.endsWith('.') ? dns1035Label(v.slice(0, -1)) : v.includes('.') ? [] : dns1035Label(v)),
  defaults(obj) {
    const svc = path(obj, 'spec.service');
    if (isObject(svc) && svc.port === undefined) svc.port = 443;
  },
  validateSpec,
  validateStatus: () => [],
  columns: [
    col('Service', 'string', 'The reference to the service that hosts this API endpoint.', apiServiceServiceText),
    col('Available', 'string', 'Whether this service is available.', availableText),
  ],
});
