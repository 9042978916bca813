/**
 * The objects a pod or a persistent volume names, as Kubernetes' VisitPodSecretNames,
 * VisitPodConfigmapNames and VisitPVSecretNames see them: what a node needs to read to run the
 * pod. Shared by the Node authorizer's graph and NodeRestriction (which refuses mirror pods
 * naming any of them).
 */
import type { KubeObject } from '../../../api/resources/types.js';

type Dict = Record<string, unknown>;
const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): Dict[] => (Array.isArray(v) ? v.filter(isDict) : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const specOf = (o: KubeObject): Dict => (isDict(o.spec) ? o.spec : {});

function containers(spec: Dict): Dict[] {
  return [...list(spec.initContainers), ...list(spec.containers), ...list(spec.ephemeralContainers)];
}

function add(out: Set<string>, name: string): void {
  if (name) out.add(name);
}

/** Names of the Secrets the pod names (pull secrets, env, volumes). */
export function podSecretNames(pod: KubeObject): Set<string> {
  const spec = specOf(pod);
  const out = new Set<string>();
  for (const r of list(spec.imagePullSecrets)) add(out, str(r.name));
  for (const c of containers(spec)) {
    for (const e of list(c.envFrom)) if (isDict(e.secretRef)) add(out, str(e.secretRef.name));
    for (const e of list(c.env)) if (isDict(e.valueFrom) && isDict(e.valueFrom.secretKeyRef)) add(out, str(e.valueFrom.secretKeyRef.name));
  }
  for (const v of list(spec.volumes)) {
    if (isDict(v.azureFile)) add(out, str(v.azureFile.secretName));
    if (isDict(v.secret)) add(out, str(v.secret.secretName));
    if (isDict(v.csi) && isDict(v.csi.nodePublishSecretRef)) add(out, str(v.csi.nodePublishSecretRef.name));
    for (const kind of ['cephfs', 'cinder', 'flexVolume', 'rbd', 'scaleIO', 'iscsi', 'storageos']) {
      const src = v[kind];
      if (isDict(src) && isDict(src.secretRef)) add(out, str(src.secretRef.name));
    }
    if (isDict(v.projected)) for (const s of list(v.projected.sources)) if (isDict(s.secret)) add(out, str(s.secret.name));
  }
  return out;
}

/** Names of the ConfigMaps the pod names (env, volumes). */
export function podConfigMapNames(pod: KubeObject): Set<string> {
  const spec = specOf(pod);
  const out = new Set<string>();
  for (const c of containers(spec)) {
    for (const e of list(c.envFrom)) if (isDict(e.configMapRef)) add(out, str(e.configMapRef.name));
    for (const e of list(c.env)) if (isDict(e.valueFrom) && isDict(e.valueFrom.configMapKeyRef)) add(out, str(e.valueFrom.configMapKeyRef.name));
  }
  for (const v of list(spec.volumes)) {
    if (isDict(v.configMap)) add(out, str(v.configMap.name));
    if (isDict(v.projected)) for (const s of list(v.projected.sources)) if (isDict(s.configMap)) add(out, str(s.configMap.name));
  }
  return out;
}

/** Names of the PersistentVolumeClaims the pod uses (generic ephemeral volumes: `<pod>-<volume>`). */
export function podClaimNames(pod: KubeObject): Set<string> {
  const out = new Set<string>();
  for (const v of list(specOf(pod).volumes)) {
    if (isDict(v.persistentVolumeClaim)) add(out, str(v.persistentVolumeClaim.claimName));
    else if (isDict(v.ephemeral)) add(out, `${str(pod.metadata?.name)}-${str(v.name)}`);
  }
  return out;
}

/** Whether the pod has a persistentVolumeClaim volume (what NodeRestriction refuses in mirror pods). */
export function podHasClaimVolume(pod: KubeObject): boolean {
  return list(specOf(pod).volumes).some((v) => isDict(v.persistentVolumeClaim));
}

export function podServiceAccountName(pod: KubeObject): string {
  return str(specOf(pod).serviceAccountName);
}

/** The `namespace/name` of every Secret a node reads to mount the volume (the kubelet-visible ones). */
export function pvSecretRefs(pv: KubeObject): Set<string> {
  const spec = specOf(pv);
  const claimNs = isDict(spec.claimRef) ? str(spec.claimRef.namespace) : '';
  const out = new Set<string>();
  const ref = (ns: string, name: string): void => { if (name) out.add(`${ns}/${name}`); };
  if (isDict(spec.azureFile)) ref(str(spec.azureFile.secretNamespace) || claimNs, str(spec.azureFile.secretName));
  for (const kind of ['cephfs', 'cinder', 'flexVolume', 'rbd', 'scaleIO', 'iscsi', 'storageos']) {
    const src = spec[kind];
    if (isDict(src) && isDict(src.secretRef)) ref(str(src.secretRef.namespace) || claimNs, str(src.secretRef.name));
  }
  if (isDict(spec.csi)) {
    // controllerPublish/controllerExpand secrets are for the controllers, not the node.
    for (const key of ['nodePublishSecretRef', 'nodeStageSecretRef', 'nodeExpandSecretRef']) {
      const r = spec.csi[key];
      if (isDict(r)) ref(str(r.namespace), str(r.name));
    }
  }
  return out;
}

/** `namespace/name` of the claim a volume is bound to ('' when unbound). */
export function pvClaim(pv: KubeObject): string {
  const spec = specOf(pv);
  if (!isDict(spec.claimRef)) return '';
  const name = str(spec.claimRef.name);
  return name ? `${str(spec.claimRef.namespace)}/${name}` : '';
}
