/**
 * What `corectl server` publishes so that nodes on other machines can join with a bootstrap
 * token, as kubeadm does at `kubeadm init`:
 *  - ConfigMap kube-public/cluster-info whose `kubeconfig` names the API server's advertised URL
 *    and the cluster CA (the bootstrapsigner controller adds one signature per token);
 *  - Role and RoleBinding kubeadm:bootstrap-signer-clusterinfo: anonymous users may get it;
 *  - ClusterRoleBindings kubeadm:kubelet-bootstrap and kubeadm:node-autoapprove-bootstrap (the
 *    token group may send node client CSRs, which csrapproving approves) and
 *    kubeadm:node-autoapprove-certificate-rotation (nodes renew their own certificates).
 *
 * Contract: objects missing are created; a cluster-info whose kubeconfig differs is rewritten
 * (its signatures are left for the signer to redo); other existing objects are left as they are
 * (an administrator may have changed them). `keepJoinInfo` repeats this every KEEP_PERIOD_MS.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../api/meta/status.js';
import type { KubeObject } from '../../api/resources/types.js';
import { clusterInfoKubeconfig, type ClusterInfo } from '../../auth/bootstrap/cluster-info.js';
import {
  CLUSTER_INFO_KUBECONFIG_KEY, CLUSTER_INFO_NAME, CLUSTER_INFO_NAMESPACE, DEFAULT_NODE_TOKEN_GROUP,
} from '../../auth/bootstrap/token-secret.js';
import type { ResourceRef, RestClient } from '../../client/rest-client.js';

export const KEEP_PERIOD_MS = 60_000;
const RBAC = 'rbac.authorization.k8s.io';
const CONFIG_MAPS: ResourceRef = { group: '', version: 'v1', resource: 'configmaps', namespace: CLUSTER_INFO_NAMESPACE };
const ROLES: ResourceRef = { group: RBAC, version: 'v1', resource: 'roles', namespace: CLUSTER_INFO_NAMESPACE };
const ROLE_BINDINGS: ResourceRef = { group: RBAC, version: 'v1', resource: 'rolebindings', namespace: CLUSTER_INFO_NAMESPACE };
const CLUSTER_ROLE_BINDINGS: ResourceRef = { group: RBAC, version: 'v1', resource: 'clusterrolebindings' };
export const CLUSTER_INFO_ROLE = 'kubeadm:bootstrap-signer-clusterinfo';

const group = (name: string): Record<string, string> => ({ apiGroup: RBAC, kind: 'Group', name });

function clusterRoleBinding(name: string, clusterRole: string, subject: Record<string, string>): KubeObject {
  return {
    apiVersion: `${RBAC}/v1`, kind: 'ClusterRoleBinding', metadata: { name },
    roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: clusterRole }, subjects: [subject],
  } as KubeObject;
}

/** The RBAC objects kubeadm creates for joining nodes, by where they go. */
export function joinRbacObjects(): Array<{ ref: ResourceRef; obj: KubeObject }> {
  return [
    { ref: ROLES, obj: {
      apiVersion: `${RBAC}/v1`, kind: 'Role', metadata: { name: CLUSTER_INFO_ROLE, namespace: CLUSTER_INFO_NAMESPACE },
      rules: [{ apiGroups: [''], resources: ['configmaps'], resourceNames: [CLUSTER_INFO_NAME], verbs: ['get'] }],
    } as KubeObject },
    { ref: ROLE_BINDINGS, obj: {
      apiVersion: `${RBAC}/v1`, kind: 'RoleBinding', metadata: { name: CLUSTER_INFO_ROLE, namespace: CLUSTER_INFO_NAMESPACE },
      roleRef: { apiGroup: RBAC, kind: 'Role', name: CLUSTER_INFO_ROLE },
      subjects: [{ apiGroup: RBAC, kind: 'User', name: 'system:anonymous' }],
    } as KubeObject },
    { ref: CLUSTER_ROLE_BINDINGS, obj: clusterRoleBinding('kubeadm:kubelet-bootstrap', 'system:node-bootstrapper', group(DEFAULT_NODE_TOKEN_GROUP)) },
    { ref: CLUSTER_ROLE_BINDINGS, obj: clusterRoleBinding('kubeadm:node-autoapprove-bootstrap', 'system:certificates.k8s.io:certificatesigningrequests:nodeclient', group(DEFAULT_NODE_TOKEN_GROUP)) },
    { ref: CLUSTER_ROLE_BINDINGS, obj: clusterRoleBinding('kubeadm:node-autoapprove-certificate-rotation', 'system:certificates.k8s.io:certificatesigningrequests:selfnodeclient', group('system:nodes')) },
  ];
}

async function createIfMissing(client: RestClient, ref: ResourceRef, obj: KubeObject): Promise<boolean> {
  try {
    await client.create(ref, obj);
    return true;
  } catch (e) {
    if (isApiError(e) && e.code === 409) return false;
    throw e;
  }
}

/** Creates what is missing and corrects cluster-info; resolves the names it wrote. */
export async function ensureJoinInfo(client: RestClient, info: ClusterInfo): Promise<string[]> {
  const wrote: string[] = [];
  const kubeconfig = clusterInfoKubeconfig(info);
  let cm: KubeObject | undefined;
  try {
    cm = await client.get(CONFIG_MAPS, CLUSTER_INFO_NAME);
  } catch (e) {
    if (!(isApiError(e) && e.code === 404)) throw e;
  }
  if (!cm) {
    const created = await createIfMissing(client, CONFIG_MAPS, {
      apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: CLUSTER_INFO_NAME, namespace: CLUSTER_INFO_NAMESPACE },
      data: { [CLUSTER_INFO_KUBECONFIG_KEY]: kubeconfig },
    } as KubeObject);
    if (created) wrote.push(`configmap ${CLUSTER_INFO_NAMESPACE}/${CLUSTER_INFO_NAME}`);
  } else {
    const data = (cm.data as Record<string, string> | undefined) ?? {};
    if (data[CLUSTER_INFO_KUBECONFIG_KEY] !== kubeconfig) {
      await client.update(CONFIG_MAPS, { ...cm, data: { ...data, [CLUSTER_INFO_KUBECONFIG_KEY]: kubeconfig } });
      wrote.push(`configmap ${CLUSTER_INFO_NAMESPACE}/${CLUSTER_INFO_NAME}`);
    }
  }
  for (const { ref, obj } of joinRbacObjects()) {
    if (await createIfMissing(client, ref, obj)) wrote.push(`${obj.kind} ${obj.metadata?.name}`);
  }
  return wrote;
}

/** ensureJoinInfo now and every KEEP_PERIOD_MS until the signal aborts; failures are logged and retried. */
export function keepJoinInfo(client: RestClient, info: ClusterInfo, log: Logger, signal: AbortSignal, periodMs = KEEP_PERIOD_MS): Promise<void> {
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const pass = async (): Promise<void> => {
      try {
        const wrote = await ensureJoinInfo(client, info);
        if (wrote.length) log.info({ wrote }, 'join information published');
      } catch (e) {
        if (!signal.aborted) log.warn({ err: (e as Error).message }, 'publishing the join information failed; retrying');
      }
      if (signal.aborted) { resolve(); return; }
      timer = setTimeout(() => { void pass(); }, periodMs);
      timer.unref();
    };
    signal.addEventListener('abort', () => { if (timer) clearTimeout(timer); resolve(); }, { once: true });
    void pass();
  });
}
