/**
 * The two provisioners that run inside the binder (no cloud needed):
 *
 * corectl.io/local-path (the class `corectl server` makes the default; k3s' local-path in
 * spirit): a claim of a WaitForFirstConsumer class gets, once the scheduler picked a node
 * (volume.kubernetes.io/selected-node), a hostPath volume of type DirectoryOrCreate at
 * <nodePath>/<pv>_<namespace>_<claim> with a node affinity to that node, pre-bound to the
 * claim. The node agent creates the directory when the first pod mounts it. Deleting it (the
 * Delete reclaim policy) is done on that node by a helper pod in kube-system, as k3s does: the
 * controller manager may not run on the volume's node, and a node agent may not read volumes
 * that none of its pods use, so neither could do it alone. The helper mounts only <nodePath>
 * and removes only the volume's own directory; the volume object goes once the helper
 * succeeded. Class parameters: nodePath (default /var/lib/corectl/storage), helperImage.
 *
 * kubernetes.io/host-path with --enable-hostpath-provisioner (Kubernetes' testing provisioner,
 * single node only): /tmp/hostpath_pv/<uuid> created on the controller manager's host; the
 * existing host-path deleter removes it.
 */
import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, normalize } from 'node:path';
import { isApiError } from '../../../../api/meta/status.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import { realClock } from '../../deps.js';
import { PODS, VOLUMES, type BinderCore } from './binder-core.js';
import { ANN_SELECTED_NODE, claimSpec, nameOf, uidOf, volumeSpec } from './volume-helpers.js';

export const LOCAL_PATH_PROVISIONER = 'corectl.io/local-path';
export const DEFAULT_LOCAL_PATH_DIR = '/var/lib/corectl/storage';
export const DEFAULT_HELPER_IMAGE = 'docker.io/library/busybox:1.36';
/** On local-path volumes: the directory the helper may mount, and the helper's image. */
export const ANN_LOCAL_PATH_BASE = 'corectl.io/local-path-base';
export const ANN_LOCAL_PATH_HELPER_IMAGE = 'corectl.io/local-path-helper-image';
const HELPER_NAMESPACE = 'kube-system';
const HELPER_TIMEOUT_MS = 120_000;

/** The volume the class's provisioner makes for the claim (without the binder's annotations). */
function baseVolume(claim: KubeObject, cls: KubeObject, provisioner: string, source: Record<string, unknown>, annotations: Record<string, string>): KubeObject {
  const cspec = claimSpec(claim);
  return {
    apiVersion: 'v1', kind: 'PersistentVolume',
    metadata: { name: `pvc-${uidOf(claim)}`, annotations: { 'pv.kubernetes.io/provisioned-by': provisioner, ...annotations } },
    spec: {
      capacity: { storage: cspec.resources?.requests?.storage ?? '1Gi' },
      accessModes: cspec.accessModes ?? ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: String(cls.reclaimPolicy ?? 'Delete'),
      storageClassName: nameOf(cls),
      volumeMode: cspec.volumeMode ?? 'Filesystem',
      claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: claim.metadata?.namespace ?? '', name: nameOf(claim), uid: uidOf(claim), resourceVersion: claim.metadata?.resourceVersion },
      ...(Array.isArray(cls.mountOptions) ? { mountOptions: cls.mountOptions } : {}),
      ...source,
    },
  };
}

/** A base directory a helper pod may mount: absolute, normalized, not the root. */
function validBase(p: string): boolean {
  return isAbsolute(p) && normalize(p) === p && p !== '/';
}

export function localPathVolume(claim: KubeObject, cls: KubeObject): KubeObject {
  const params = (cls.parameters ?? {}) as Record<string, string>;
  const node = claim.metadata?.annotations?.[ANN_SELECTED_NODE];
  if (!node) throw new Error('configuration error, no node was specified');
  const base = params.nodePath || DEFAULT_LOCAL_PATH_DIR;
  if (!validBase(base)) throw new Error(`parameter nodePath "${base}" must be an absolute, normalized path other than /`);
  const pvName = `pvc-${uidOf(claim)}`;
  const path = join(base, `${pvName}_${claim.metadata?.namespace ?? ''}_${nameOf(claim)}`);
  return baseVolume(claim, cls, LOCAL_PATH_PROVISIONER, {
    hostPath: { path, type: 'DirectoryOrCreate' },
    nodeAffinity: { required: { nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [node] }] }] } },
  }, { [ANN_LOCAL_PATH_BASE]: base, [ANN_LOCAL_PATH_HELPER_IMAGE]: params.helperImage || DEFAULT_HELPER_IMAGE });
}

export async function hostPathVolume(claim: KubeObject, cls: KubeObject): Promise<KubeObject> {
  const path = `/tmp/hostpath_pv/${randomUUID()}`;
  await mkdir(path, { recursive: true, mode: 0o750 });
  return baseVolume(claim, cls, 'kubernetes.io/host-path', { hostPath: { path } }, { 'kubernetes.io/createdby': 'hostpath-dynamic-provisioner' });
}

/** Creates the provisioned volume; one that already exists (an earlier attempt) is fine. */
export async function createProvisionedVolume(core: BinderCore, volume: KubeObject): Promise<void> {
  try {
    await core.client.create(VOLUMES, volume);
    core.log.info({ volume: nameOf(volume) }, 'volume provisioned');
  } catch (e) {
    if (!(isApiError(e) && e.code === 409)) throw e;
  }
}

/** Where a local-path volume lives, for its deletion; an error says why it cannot be deleted. */
export function localPathTarget(volume: KubeObject): { node: string; base: string; dir: string; image: string } | { error: string } {
  const ann = volume.metadata?.annotations ?? {};
  const path = String(volumeSpec(volume).hostPath?.path ?? '');
  const base = ann[ANN_LOCAL_PATH_BASE] ?? '';
  const terms = ((volumeSpec(volume).nodeAffinity as { required?: { nodeSelectorTerms?: Array<{ matchFields?: Array<{ values?: string[] }> }> } } | undefined)?.required?.nodeSelectorTerms) ?? [];
  const node = terms[0]?.matchFields?.[0]?.values?.[0] ?? '';
  const dir = basename(path);
  // Only <base>/pvc-..._ns_name, a direct child of a sane base, is ever removed.
  if (!validBase(base) || dirname(path) !== base || !/^pvc-[0-9a-f-]+_[^/]+$/.test(dir)) return { error: `local-path volume "${nameOf(volume)}": path ${path} is not a local-path directory under ${base || '(no base)'}` };
  if (!node) return { error: `local-path volume "${nameOf(volume)}" has no node affinity naming its node` };
  return { node, base, dir, image: ann[ANN_LOCAL_PATH_HELPER_IMAGE] || DEFAULT_HELPER_IMAGE };
}

function helperPod(volume: KubeObject, t: { node: string; base: string; dir: string; image: string }): KubeObject {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name: `helper-pod-delete-${nameOf(volume)}`.slice(0, 63), namespace: HELPER_NAMESPACE, labels: { 'corectl.io/local-path-helper': 'delete' } },
    spec: {
      nodeName: t.node, restartPolicy: 'Never', automountServiceAccountToken: false,
      tolerations: [{ operator: 'Exists' }],
      containers: [{
        name: 'helper-pod', image: t.image, imagePullPolicy: 'IfNotPresent',
        command: ['rm', '-rf', `/data/${t.dir}`],
        volumeMounts: [{ name: 'data', mountPath: '/data' }],
      }],
      volumes: [{ name: 'data', hostPath: { path: t.base, type: 'DirectoryOrCreate' } }],
    },
  };
}

/** The helper pod is still running: not a failure of the deletion, which is tried again. */
export class HelperPending extends Error {
  override readonly name = 'HelperPending';
}

/** Runs the helper pod that removes the volume's directory on its node; resolves once it succeeded. */
export async function deleteLocalPathDirectory(core: BinderCore, volume: KubeObject): Promise<void> {
  const t = localPathTarget(volume);
  if ('error' in t) throw new Error(t.error);
  const pod = helperPod(volume, t);
  const ref = { ...PODS, namespace: HELPER_NAMESPACE };
  const name = nameOf(pod);
  const remove = (): Promise<unknown> => core.client.delete(ref, name, { gracePeriodSeconds: 0 }).catch(() => undefined);
  try {
    await core.client.create(ref, pod);
  } catch (e) {
    if (!(isApiError(e) && e.code === 409)) throw e;
  }
  const deadline = Date.now() + HELPER_TIMEOUT_MS;
  for (;;) {
    let phase = '';
    try {
      phase = String(((await core.client.get(ref, name)).status as { phase?: string } | undefined)?.phase ?? '');
    } catch (e) {
      if (!(isApiError(e) && e.code === 404)) throw e;
      throw new Error(`helper pod ${HELPER_NAMESPACE}/${name} disappeared`);
    }
    if (phase === 'Succeeded') { await remove(); return; }
    if (phase === 'Failed') { await remove(); throw new Error(`helper pod ${HELPER_NAMESPACE}/${name} failed to remove ${t.base}/${t.dir} on node ${t.node}`); }
    // Still pulling or waiting for its node: the operation is retried later (the pod stays).
    if (Date.now() > deadline) throw new HelperPending(`helper pod ${HELPER_NAMESPACE}/${name} has not finished within ${HELPER_TIMEOUT_MS / 1000}s on node ${t.node}`);
    await realClock.sleep(1000);
  }
}
