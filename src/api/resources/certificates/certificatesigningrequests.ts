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
import { metaTime } from '../../meta/time.js';

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

/** The decisions only the approval subresource writes. */
const APPROVAL_TYPES = ['Approved', 'Denied'];

type Condition = Record<string, unknown>;

function conditionsOf(o: KubeObject): Condition[] {
  return arr(path(o, 'status.conditions')).map(rec);
}

/**
 * Kubernetes fills what a writer left out: lastUpdateTime (now), and lastTransitionTime (the
 * previous one while the condition's status is unchanged, else now).
 */
function withTimestamps(conditions: Condition[], prev: Condition[]): Condition[] {
  const now = metaTime();
  return conditions.map((c) => {
    const out = { ...c };
    out.lastUpdateTime ??= now;
    if (out.lastTransitionTime === undefined) {
      const before = prev.find((p) => p.type === c.type);
      out.lastTransitionTime = before && before.status === c.status && before.lastTransitionTime ? before.lastTransitionTime : now;
    }
    return out;
  });
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
  subresources: { status: true, statusLike: ['approval'], extra: [{ name: 'approval', verbs: ['get', 'patch', 'update'], kind: { group: 'certificates.k8s.io', version: 'v1', kind: 'CertificateSigningRequest' } }] },
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
  prepareForStatusUpdate(obj, old, subresource) {
    obj.spec = old.spec;
    const next = conditionsOf(obj);
    const prev = conditionsOf(old);
    // approval: only the conditions change. status: everything but the approval decisions.
    const conditions = subresource === 'approval'
      ? next
      : [...prev.filter((c) => APPROVAL_TYPES.includes(str(c.type))), ...next.filter((c) => !APPROVAL_TYPES.includes(str(c.type)))];
    const status = subresource === 'approval' ? { ...rec(old.status) } : { ...rec(obj.status) };
    if (conditions.length) status.conditions = withTimestamps(conditions, prev); else delete status.conditions;
    obj.status = status;
  },
  validateStatus(obj, old) {
    const errs: FieldError[] = [];
    const conds = conditionsOf(obj);
    const types = conds.map((c) => str(c.type));
    conds.forEach((c, i) => {
      if (!str(c.type)) errs.push(fieldErrors.required(`status.conditions[${i}].type`));
      if (!['True', 'False', 'Unknown'].includes(str(c.status))) errs.push(fieldErrors.notSupported(`status.conditions[${i}].status`, c.status ?? '', ['False', 'True', 'Unknown']));
      if (types.indexOf(str(c.type)) !== i && APPROVAL_TYPES.concat('Failed').includes(str(c.type))) errs.push(fieldErrors.duplicate(`status.conditions[${i}].type`, c.type));
    });
    if (types.includes('Approved') && types.includes('Denied')) {
      errs.push(fieldErrors.invalid('status.conditions', 'Approved', 'Approved and Denied conditions are mutually exclusive'));
    }
    for (const t of [...APPROVAL_TYPES, 'Failed']) {
      if (conditionsOf(old).some((c) => c.type === t) && !types.includes(t)) errs.push(fieldErrors.forbidden('status.conditions', `updates may not remove a condition of type ${JSON.stringify(t)}`));
    }
    const oldCert = str(path(old, 'status.certificate'));
    if (oldCert && str(path(obj, 'status.certificate')) !== oldCert) errs.push(fieldErrors.forbidden('status.certificate', 'updates may not modify existing certificate content'));
    return errs;
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
