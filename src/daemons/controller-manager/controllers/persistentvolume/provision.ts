/**
 * Dynamic provisioning of an unbound claim with a class and no matching volume (Kubernetes'
 * provisionClaim), when --enable-dynamic-provisioning is on (the default).
 *
 * In-tree provisioners (local-path.ts): corectl.io/local-path, and kubernetes.io/host-path with
 * --enable-hostpath-provisioner. A class naming an external provisioner (any other name outside
 * `kubernetes.io/`, or a migrated in-tree plugin, which means its CSI driver) gets the claim
 * annotated with both storage-provisioner keys and an ExternalProvisioning event; the
 * external provisioner creates a volume pre-bound to the claim, which a later sync binds. A
 * missing class or an unknown `kubernetes.io/` provisioner gives ProvisioningFailed. The
 * host-path provisioner fails as Kubernetes' does when it is switched off.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { isApiError } from '../../../../api/meta/status.js';
import { claimEvent, VOLUMES, type BinderCore } from './binder-core.js';
import { claimClass, claimKey, nameOf, uidOf } from './volume-helpers.js';
import { createProvisionedVolume, hostPathVolume, localPathVolume, LOCAL_PATH_PROVISIONER } from './local-path.js';
import { HOST_PATH_PLUGIN, provisionerFor } from './volume-plugins.js';
import { setClaimProvisioner } from './writes.js';

/** Starts (or leaves running) the provisioning of the claim; failures to start are events. */
export async function provisionClaim(core: BinderCore, claim: KubeObject): Promise<void> {
  if (!core.enableDynamicProvisioning) return;
  const className = claimClass(claim);
  const cls = core.classInformer.indexer.get(undefined, className);
  if (!cls) {
    claimEvent(core, claim, 'Warning', 'ProvisioningFailed', `storageclass.storage.k8s.io "${className}" not found`);
    return;
  }
  const provisioner = provisionerFor(String(cls.provisioner ?? ''));
  if (provisioner.kind === 'failed') {
    claimEvent(core, claim, 'Warning', 'ProvisioningFailed', provisioner.error);
    return;
  }
  const op = provisioner.kind === 'external'
    ? () => provisionExternal(core, claim, provisioner.name)
    : () => provisionInTree(core, claim, cls, provisioner.plugin);
  core.operations.run(`provision-${claimKey(claim)}[${uidOf(claim)}]`, op);
}

async function provisionExternal(core: BinderCore, claim: KubeObject, provisioner: string): Promise<void> {
  let updated: KubeObject;
  try {
    updated = await setClaimProvisioner(core, claim, provisioner);
  } catch (e) {
    claimEvent(core, claim, 'Warning', 'ProvisioningFailed', `Error saving claim: ${(e as Error).message}`);
    throw e;
  }
  claimEvent(core, updated, 'Normal', 'ExternalProvisioning',
    `Waiting for a volume to be created either by the external provisioner '${provisioner}' or manually by the system administrator. `
    + 'If volume creation is delayed, please verify that the provisioner is running and correctly registered.');
}

/**
 * Kubernetes' provisionClaimOperation for the in-tree provisioners: host-path (with
 * --enable-hostpath-provisioner; refused as Kubernetes refuses it otherwise) and local-path.
 */
async function provisionInTree(core: BinderCore, claim: KubeObject, cls: KubeObject, plugin: string): Promise<void> {
  const fail = (message: string): never => {
    claimEvent(core, claim, 'Warning', 'ProvisioningFailed', message);
    throw new Error(message);
  };
  if ((claim.spec as { dataSource?: unknown } | undefined)?.dataSource != null) {
    fail(`plugin "${plugin}" is not a CSI plugin. Only CSI plugin can provision a claim with a datasource`);
  }
  const updated = await setClaimProvisioner(core, claim, String(cls.provisioner));
  try {
    await core.client.get(VOLUMES, `pvc-${uidOf(updated)}`);
    return; // Provisioned by an earlier attempt.
  } catch (e) {
    if (!(isApiError(e) && e.code === 404)) throw e;
  }
  const mountOptions = (cls.mountOptions as string[] | undefined) ?? [];
  if (mountOptions.length && plugin === HOST_PATH_PLUGIN) {
    fail(`Mount options are not supported by the provisioner but StorageClass "${nameOf(cls)}" has mount options [${mountOptions.join(' ')}]`);
  }
  if (plugin === HOST_PATH_PLUGIN && !core.enableHostPathProvisioner) fail(`Failed to create provisioner: Provisioning in volume plugin "${plugin}" is disabled`);
  let volume: KubeObject;
  try {
    volume = plugin === LOCAL_PATH_PROVISIONER ? localPathVolume(updated, cls) : await hostPathVolume(updated, cls);
  } catch (e) {
    return fail(`failed to provision volume with StorageClass "${nameOf(cls)}": ${(e as Error).message}`);
  }
  await createProvisionedVolume(core, volume);
  claimEvent(core, updated, 'Normal', 'ProvisioningSucceeded', `Successfully provisioned volume ${nameOf(volume)} using ${plugin}`);
}
