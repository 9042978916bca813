/**
 * NodeRestriction admission, as Kubernetes' plugin: what a node (`system:node:<name>` in
 * `system:nodes`) writes must be its own. A node may create and change only its own Node (not
 * its taints, nor labels under node-restriction.kubernetes.io/ or other kubernetes.io / k8s.io
 * labels the kubelet does not own), create only mirror pods bound to itself and owned by its
 * Node that name no service account, secret, config map or claim, delete and evict only pods
 * bound to it, update only their status (not their labels), touch only its own Lease in
 * kube-node-lease and its own CSINode, request tokens only bound to its pods, update only the
 * status of a claim, and ask for kubelet certificates only in its own name. Others pass.
 *
 * Messages are Kubernetes' (`<resource> "<name>" is forbidden: <why>`), typos included.
 */
import { errors } from '../../../api/meta/status.js';
import { MIRROR_POD_ANNOTATION } from '../../../api/resources/core/pods.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { nodeIdentity } from '../../../auth/authorizers/node/node-identity.js';
import { podConfigMapNames, podHasClaimVolume, podSecretNames } from '../../../auth/authorizers/node/object-references.js';
import { isStorageError } from '../../../storage/errors.js';
import { loadX509 } from '../../../util/pki.js';
import type { AdmissionAttributes, AdmissionContext, AdmissionPlugin } from './types.js';

export const NODE_LEASE_NAMESPACE = 'kube-node-lease';

type Dict = Record<string, unknown>;
const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);
const rec = (v: unknown): Dict => (isDict(v) ? v : {});
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

const HANDLED = new Set(['/pods', '/nodes', '/persistentvolumeclaims', '/serviceaccounts', 'coordination.k8s.io/leases',
  'storage.k8s.io/csinodes', 'certificates.k8s.io/certificatesigningrequests']);

function forbidden(a: AdmissionAttributes, why: string): Error {
  return errors.admissionForbidden({ group: a.def.group, resource: a.def.plural, name: a.name }, why);
}

export function nodeRestriction(ctx: AdmissionContext): AdmissionPlugin {
  /** A pod as stored (Kubernetes reads its informer; NotFound is the answer then). */
  async function storedPod(namespace: string, name: string): Promise<KubeObject> {
    try {
      return await ctx.store.get({ group: '', resource: 'pods', namespace, name });
    } catch (e) {
      if (isStorageError(e, 'KeyNotFound')) throw errors.notFound({ group: '', resource: 'pods', name });
      throw e;
    }
  }

  async function nodeUid(a: AdmissionAttributes, node: string): Promise<string> {
    try {
      return str((await ctx.store.get({ group: '', resource: 'nodes', namespace: '', name: node })).metadata?.uid);
    } catch (e) {
      if (isStorageError(e, 'KeyNotFound')) throw errors.notFound({ group: '', resource: 'nodes', name: node });
      throw forbidden(a, `error looking up node ${node} to verify uid: ${(e as Error).message}`);
    }
  }

  async function podCreate(a: AdmissionAttributes, node: string): Promise<void> {
    const pod = a.object ?? {};
    if (pod.metadata?.annotations?.[MIRROR_POD_ANNOTATION] === undefined) {
      throw forbidden(a, `pod does not have "${MIRROR_POD_ANNOTATION}" annotation, node "${node}" can only create mirror pods`);
    }
    const spec = rec(pod.spec);
    if (str(spec.nodeName) !== node) throw forbidden(a, `node "${node}" can only create pods with spec.nodeName set to itself`);
    const owners = Array.isArray(pod.metadata?.ownerReferences) ? pod.metadata.ownerReferences : [];
    if (owners.length > 1) throw forbidden(a, `node "${node}" can only create pods with a single owner reference set to itself`);
    const owner = rec(owners[0]);
    if (owners.length === 0 || owner.apiVersion !== 'v1' || owner.kind !== 'Node' || owner.name !== node) {
      throw forbidden(a, `node "${node}" can only create pods with an owner reference set to itself`);
    }
    if (owner.controller !== true) throw forbidden(a, `node "${node}" can only create pods with a controller owner reference set to itself`);
    if (owner.blockOwnerDeletion === true) throw forbidden(a, `node "${node}" must not set blockOwnerDeletion on an owner reference`);
    const uid = await nodeUid(a, node);
    if (str(owner.uid) !== uid) throw forbidden(a, `node ${node} UID mismatch: expected ${str(owner.uid)} got ${uid}`);
    // A node must not grant itself access to other objects by naming them in a pod it creates.
    if (str(spec.serviceAccountName) !== '') throw forbidden(a, `node "${node}" can not create pods that reference a service account`);
    if (podSecretNames(pod).size > 0) throw forbidden(a, `node "${node}" can not create pods that reference secrets`);
    if (podConfigMapNames(pod).size > 0) throw forbidden(a, `node "${node}" can not create pods that reference configmaps`);
    for (const v of Array.isArray(spec.volumes) ? spec.volumes : []) {
      for (const s of Array.isArray(rec(rec(v).projected).sources) ? rec(rec(v).projected).sources as unknown[] : []) {
        if (isDict(rec(s).clusterTrustBundle)) throw forbidden(a, `node "${node}" can not create pods that reference clustertrustbundles`);
      }
    }
    if (podHasClaimVolume(pod)) throw forbidden(a, `node "${node}" can not create pods that reference persistentvolumeclaims`);
  }

  async function pod(a: AdmissionAttributes, node: string): Promise<void> {
    switch (a.subresource) {
      case '':
        if (a.operation === 'CREATE') return podCreate(a, node);
        if (a.operation === 'DELETE') {
          const existing = a.oldObject ?? await storedPod(a.namespace, a.name);
          if (str(rec(existing.spec).nodeName) !== node) throw forbidden(a, `node "${node}" can only delete pods with spec.nodeName set to itself`);
          return;
        }
        throw forbidden(a, `unexpected operation "${a.operation}", node "${node}" can only create and delete mirror pods`);
      case 'status': {
        if (a.operation !== 'UPDATE') throw forbidden(a, `unexpected operation "${a.operation}"`);
        const old = a.oldObject ?? {};
        if (str(rec(old.spec).nodeName) !== node) throw forbidden(a, `node "${node}" can only update pod status for pods with spec.nodeName set to itself`);
        if (!sameStrings(old.metadata?.labels, a.object?.metadata?.labels)) throw forbidden(a, `node "${node}" cannot update labels through pod status`);
        if (JSON.stringify(claimStatuses(old)) !== JSON.stringify(claimStatuses(a.object))) throw forbidden(a, `node "${node}" cannot update resource claim statues`);
        return;
      }
      case 'eviction': {
        if (a.operation !== 'CREATE') throw forbidden(a, `unexpected operation ${a.operation}`);
        const podName = a.name || str(a.object?.metadata?.name);
        if (!podName) throw forbidden(a, 'could not determine pod from request data');
        const existing = await storedPod(a.namespace, podName);
        if (str(rec(existing.spec).nodeName) !== node) throw forbidden(a, `node ${node} can only evict pods with spec.nodeName set to itself`);
        return;
      }
      default:
        throw forbidden(a, `unexpected pod subresource "${a.subresource}", only 'status' and 'eviction' are allowed`);
    }
  }

  async function serviceAccountToken(a: AdmissionAttributes, node: string): Promise<void> {
    if (a.operation !== 'CREATE' || a.subresource !== 'token') return;
    const ref = rec(rec(a.object?.spec).boundObjectRef);
    if (ref.apiVersion !== 'v1' || ref.kind !== 'Pod' || !str(ref.name)) throw forbidden(a, 'node requested token not bound to a pod');
    if (!str(ref.uid)) throw forbidden(a, 'node requested token with a pod binding without a uid');
    const p = await storedPod(a.namespace, str(ref.name));
    if (str(ref.uid) !== str(p.metadata?.uid)) {
      throw forbidden(a, `the UID in the bound object reference (${str(ref.uid)}) does not match the UID in record. The object might have been deleted and then recreated`);
    }
    if (str(rec(p.spec).nodeName) !== node) throw forbidden(a, 'node requested token bound to a pod scheduled on a different node');
  }

  async function csr(a: AdmissionAttributes, node: string): Promise<void> {
    if (a.operation !== 'CREATE') return;
    const spec = rec(a.object?.spec);
    const signer = str(spec.signerName);
    if (signer !== 'kubernetes.io/kubelet-serving' && signer !== 'kubernetes.io/kube-apiserver-client-kubelet') return;
    let cn: string;
    try {
      cn = await requestCommonName(str(spec.request));
    } catch (e) {
      throw forbidden(a, `unable to parse csr: ${(e as Error).message}`);
    }
    if (cn !== `system:node:${node}`) throw forbidden(a, `can only create a node CSR with CN=system:node:${node}`);
  }

  return {
    name: 'NodeRestriction',
    handles: (_op, def) => HANDLED.has(`${def.group}/${def.plural}`),
    admit(a): void | Promise<void> {
      const user = a.request?.user;
      const id = nodeIdentity(user);
      if (!id.isNode) return;
      if (!id.nodeName) throw forbidden(a, `could not determine node from user "${user?.name ?? ''}"`);
      const node = id.nodeName;
      switch (`${a.def.group}/${a.def.plural}`) {
        case '/pods': return pod(a, node);
        case '/nodes': return admitNode(a, node);
        case '/persistentvolumeclaims':
          if (a.subresource !== 'status') throw forbidden(a, 'may only update PVC status');
          return admitClaimStatus(a, node);
        case '/serviceaccounts': return serviceAccountToken(a, node);
        case 'coordination.k8s.io/leases': return admitLease(a, node);
        case 'storage.k8s.io/csinodes': return admitOwnNamed(a, node, 'can only access CSINode with the same name as the requesting node');
        case 'certificates.k8s.io/certificatesigningrequests': return csr(a, node);
        default: return;
      }
    },
  };
}

function admitNode(a: AdmissionAttributes, node: string): void {
  if (a.name !== node) throw forbidden(a, `node "${node}" is not allowed to modify node "${a.name}"`);
  const spec = rec(a.object?.spec);
  if (a.operation === 'CREATE') {
    // Kubernetes' message says "pods" here too.
    if (spec.configSource !== undefined && spec.configSource !== null) throw forbidden(a, `node "${node}" is not allowed to create pods with a non-nil configSource`);
    const bad = forbiddenLabels(modifiedLabels(a.object?.metadata?.labels, undefined));
    if (bad.length) throw forbidden(a, `node "${node}" is not allowed to set the following labels: ${bad.join(', ')}`);
  }
  if (a.operation === 'UPDATE') {
    const oldSpec = rec(a.oldObject?.spec);
    if (spec.configSource !== undefined && spec.configSource !== null && JSON.stringify(spec.configSource) !== JSON.stringify(oldSpec.configSource)) {
      throw forbidden(a, `node "${node}" is not allowed to update configSource to a new non-nil configSource`);
    }
    if (!sameTaints(spec.taints, oldSpec.taints)) throw forbidden(a, `node "${node}" is not allowed to modify taints`);
    const bad = forbiddenLabels(modifiedLabels(a.object?.metadata?.labels, a.oldObject?.metadata?.labels));
    if (bad.length) throw forbidden(a, `is not allowed to modify labels: ${bad.join(', ')}`);
  }
}

/** Only status.capacity and status.conditions (and the expansion-recovery fields) may change. */
function admitClaimStatus(a: AdmissionAttributes, node: string): void {
  if (a.operation !== 'UPDATE') throw forbidden(a, `unexpected operation "${a.operation}"`);
  const strip = (o: KubeObject | undefined): unknown => {
    const copy = JSON.parse(JSON.stringify(o ?? {})) as KubeObject & { status?: Dict };
    if (copy.metadata) { delete copy.metadata.resourceVersion; delete copy.metadata.managedFields; }
    if (copy.status) for (const k of ['capacity', 'conditions', 'allocatedResources', 'allocatedResourceStatuses']) delete copy.status[k];
    return sortKeys(copy);
  };
  const before = JSON.stringify(strip(a.oldObject));
  const after = JSON.stringify(strip(a.object));
  if (before !== after) {
    throw forbidden(a, `node "${node}" is not allowed to update fields other than status.quantity and status.conditions: ${before} != ${after}`);
  }
}

function admitLease(a: AdmissionAttributes, node: string): void {
  if (a.namespace !== NODE_LEASE_NAMESPACE) throw forbidden(a, `can only access leases in the "${NODE_LEASE_NAMESPACE}" system namespace`);
  admitOwnNamed(a, node, 'can only access node lease with the same name as the requesting node');
}

/** The object (on create, the one in the body) must carry the node's name. */
function admitOwnNamed(a: AdmissionAttributes, node: string, why: string): void {
  const name = a.operation === 'CREATE' ? str(a.object?.metadata?.name) : a.name;
  if (name !== node) throw forbidden(a, why);
}

/** Label keys a kubelet may set on its own Node (k8s.io/kubelet's well-known labels and namespaces). */
const KUBELET_LABELS = new Set([
  'kubernetes.io/hostname', 'topology.kubernetes.io/zone', 'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone', 'failure-domain.beta.kubernetes.io/region',
  'node.kubernetes.io/instance-type', 'beta.kubernetes.io/instance-type',
  'kubernetes.io/os', 'kubernetes.io/arch', 'beta.kubernetes.io/os', 'beta.kubernetes.io/arch',
]);
const KUBELET_LABEL_NAMESPACES = ['kubelet.kubernetes.io', 'node.kubernetes.io'];

const labelNamespace = (key: string): string => (key.includes('/') ? key.slice(0, key.indexOf('/')) : '');
const inNamespace = (ns: string, domain: string): boolean => ns === domain || ns.endsWith(`.${domain}`);

function isKubeletLabel(key: string): boolean {
  if (KUBELET_LABELS.has(key)) return true;
  const ns = labelNamespace(key);
  return KUBELET_LABEL_NAMESPACES.some((d) => inNamespace(ns, d));
}

/** The keys (sorted) a node may not add, remove or change. */
export function forbiddenLabels(keys: Iterable<string>): string[] {
  const out = new Set<string>();
  for (const key of keys) {
    const ns = labelNamespace(key);
    if (inNamespace(ns, 'node-restriction.kubernetes.io')) out.add(key);
    if ((inNamespace(ns, 'kubernetes.io') || inNamespace(ns, 'k8s.io')) && !isKubeletLabel(key)) out.add(key);
  }
  return [...out].sort();
}

function modifiedLabels(a: Record<string, string> | undefined, b: Record<string, string> | undefined): Set<string> {
  const out = new Set<string>();
  const x = a ?? {};
  const y = b ?? {};
  for (const [k, v] of Object.entries(x)) if (y[k] !== v) out.add(k);
  for (const [k, v] of Object.entries(y)) if (x[k] !== v) out.add(k);
  return out;
}

function sameStrings(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  return modifiedLabels(a, b).size === 0;
}

function sameTaints(a: unknown, b: unknown): boolean {
  const norm = (v: unknown): unknown[] => (Array.isArray(v) ? v.map(sortKeys) : []);
  return JSON.stringify(norm(a)) === JSON.stringify(norm(b));
}

function claimStatuses(pod: KubeObject | undefined): unknown[] {
  const list = rec(pod?.status).resourceClaimStatuses;
  return Array.isArray(list) ? list.map((s) => [str(rec(s).name), rec(s).resourceClaimName ?? null]) : [];
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (!isDict(v)) return v;
  const out: Dict = {};
  for (const k of Object.keys(v).sort()) out[k] = sortKeys(v[k]);
  return out;
}

/** The subject CN of a CSR's spec.request (base64 of a PEM CERTIFICATE REQUEST). */
async function requestCommonName(request: string): Promise<string> {
  const pem = Buffer.from(request, 'base64').toString('latin1');
  const m = /-----BEGIN CERTIFICATE REQUEST-----([\s\S]*?)-----END CERTIFICATE REQUEST-----/.exec(pem);
  if (!m) throw new Error('PEM block type must be CERTIFICATE REQUEST');
  const x509 = await loadX509();
  const req = new x509.Pkcs10CertificateRequest(Buffer.from((m[1] ?? '').replace(/\s+/g, ''), 'base64'));
  return req.subjectName.getField('CN').at(-1) ?? '';
}
