/**
 * certificates.k8s.io/v1 CertificateSigningRequest (status and approval subresources), plus
 * certificates.k8s.io/v1beta1 served by conversion: the same fields, but v1beta1 defaults
 * signerName (kubernetes.io/legacy-unknown), usages (digital signature, key encipherment) and a
 * condition's status (True), which v1 requires instead. Defaults apply on the way to storage.
 */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { col, arr, rec, str, path, humanDuration } from '../common/table-util.js';
import { isObject, immutable } from '../common/validation.js';
import type { KubeObject } from '../types.js';

const USAGES = ['signing', 'digital signature', 'content commitment', 'key encipherment', 'key agreement', 'data encipherment', 'cert sign', 'crl sign', 'encipher only', 'decipher only', 'any', 'server auth', 'client auth', 'code signing', 'email protection', 's/mime', 'ipsec end system', 'ipsec tunnel', 'ipsec user', 'timestamping', 'ocsp signing', 'microsoft sgc', 'netscape sgc'];

const LEGACY_SIGNER = 'kubernetes.io/legacy-unknown';

function convertCsr(obj: KubeObject, toVersion: string): KubeObject {
  const out: KubeObject = { ...obj, apiVersion: `certificates.k8s.io/${toVersion}` };
  if (obj.apiVersion !== 'certificates.k8s.io/v1beta1' || toVersion !== 'v1') return out;
  if (isObject(obj.spec)) {
    const spec = { ...obj.spec };
    if (!str(spec.signerName)) spec.signerName = LEGACY_SIGNER;
    if (!arr(spec.usages).length) spec.usages = ['digital signature', 'key encipherment'];
    out.spec = spec;
  }
  if (isObject(obj.status) && Array.isArray(obj.status.conditions)) {
    out.status = { ...obj.status, conditions: obj.status.conditions.map((c) => (isObject(c) && !c.status ? { ...c, status: 'True' } : c)) };
  }
  return out;
}

function condition(o: KubeObject): string {
  const conds = arr(path(o, 'status.conditions')).map(rec).map((c) => str(c.type));
  if (!conds.length) return 'Pending';
  const out = [...conds];
  if (path(o, 'status.certificate')) out.push('Issued');
  return out.join(',');
}

export const certificatesigningrequests = defineResource({
  group: 'certificates.k8s.io', versions: ['v1', 'v1beta1'], storageVersion: 'v1', kind: 'CertificateSigningRequest', plural: 'certificatesigningrequests', namespaced: false,
  shortNames: ['csr'],
  convert: convertCsr,
  subresources: { status: true, extra: [{ name: 'approval', verbs: ['get', 'patch', 'update'], kind: { group: 'certificates.k8s.io', version: 'v1', kind: 'CertificateSigningRequest' } }] },
  validateSpec(obj, old) {
    const errs: FieldError[] = [];
    const spec = rec(obj.spec);
    if (typeof spec.request !== 'string' || !spec.request) errs.push(fieldErrors.required('spec.request'));
    else {
      const pem = Buffer.from(spec.request, 'base64').toString('utf8');
      if (!pem.includes('-----BEGIN CERTIFICATE REQUEST-----')) errs.push(fieldErrors.invalid('spec.request', '<request>', 'PEM block type must be CERTIFICATE REQUEST'));
    }
    if (!str(spec.signerName)) errs.push(fieldErrors.required('spec.signerName'));
    if (!arr(spec.usages).length) errs.push(fieldErrors.required('spec.usages'));
    arr(spec.usages).forEach((u, i) => { if (!USAGES.includes(String(u))) errs.push(fieldErrors.notSupported(`spec.usages[${i}]`, u, USAGES)); });
    if (typeof spec.expirationSeconds === 'number' && spec.expirationSeconds < 600) errs.push(fieldErrors.invalid('spec.expirationSeconds', spec.expirationSeconds, 'may not specify a duration less than 600 seconds (10 minutes)'));
    if (old) immutable(errs, 'spec', obj.spec, old.spec);
    return errs;
  },
  prepareForCreate(obj) {
    delete obj.status;
    // Requestor identity is filled by the REST layer from the authenticated user.
  },
  prepareForUpdate(obj, old) { obj.spec = old.spec; obj.status = old.status; },
  prepareForStatusUpdate(obj, old) {
    obj.spec = old.spec;
    // The status subresource may set the certificate, not approval conditions' removal.
    const oc = arr(path(old, 'status.conditions')), nc = arr(path(obj, 'status.conditions'));
    if (isObject(obj.status) && nc.length < oc.length) obj.status.conditions = oc;
  },
  columns: [
    col('SignerName', 'string', 'Requested signer for the request.', (o) => str(path(o, 'spec.signerName'))),
    col('Requestor', 'string', 'Name of the user which made this request.', (o) => str(path(o, 'spec.username'))),
    col('RequestedDuration', 'string', 'Requested duration of the certificate.', (o) => { const s = path(o, 'spec.expirationSeconds'); return typeof s === 'number' ? humanDuration(s * 1000) : '<none>'; }),
    col('Condition', 'string', 'Condition of the request.', condition),
  ],
});
// kubectl shows AGE second for CSRs.
{
  const cols = certificatesigningrequests.tableColumns as unknown as unknown[];
  const age = cols.pop();
  cols.unshift(age);
}
