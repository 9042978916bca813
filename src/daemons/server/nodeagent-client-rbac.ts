/**
 * What the API server may do on node agents under RBAC: its client identity towards them
 * (CN corectl-apiserver-nodeagent-client, no group) is bound to Kubernetes' ClusterRole
 * system:kubelet-api-admin, as kubeadm binds its apiserver-kubelet-client
 * (ClusterRoleBinding kubeadm:kubelet-api-admin). The node agent asks the API server about each
 * call (--authorization-mode=Webhook); without this binding logs, exec, attach and
 * port-forward would be 403.
 *
 * Written with the admin credentials once the API server is ready, before the other parts
 * start; an existing binding is brought back to this content (a user who wants another one
 * names it differently).
 */
import type { Logger } from 'pino';
import { ApiError } from '../../api/meta/status.js';
import type { KubeObject } from '../../api/resources/types.js';
import type { ClientConnection } from '../../client/coreconfig.js';
import { RestClient } from '../../client/rest-client.js';
import { NODEAGENT_CLIENT_USER } from './pki-bootstrap.js';
import { sameInGoForm } from '../../api/codec/go-json.js';

export const NODEAGENT_CLIENT_BINDING = 'corectl:kubelet-api-admin';

const CRB = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterrolebindings' };

export function nodeagentClientBinding(): KubeObject {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding',
    metadata: { name: NODEAGENT_CLIENT_BINDING },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:kubelet-api-admin' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: NODEAGENT_CLIENT_USER }],
  };
}

/** Creates or restores the binding; failures are logged (the cluster runs, node calls are refused). */
export async function ensureNodeagentClientBinding(admin: ClientConnection, log: Logger): Promise<boolean> {
  const client = new RestClient({ connection: admin, contentType: 'application/json', qps: 0, maxRetries: 3, userAgent: 'corectl-server' });
  const want = nodeagentClientBinding();
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      let have: KubeObject | undefined;
      try {
        have = await client.get(CRB, NODEAGENT_CLIENT_BINDING);
      } catch (e) {
        if (!(e instanceof ApiError && e.code === 404)) throw e;
      }
      try {
        if (!have) { await client.create(CRB, want); return true; }
        // Compared as Kubernetes does (the stored binding is in Go's field order).
        const same = sameInGoForm('k8s.io.api.rbac.v1.Subject', (have as { subjects?: unknown }).subjects ?? [], (want as { subjects?: unknown }).subjects)
          && sameInGoForm('k8s.io.api.rbac.v1.RoleRef', (have as { roleRef?: unknown }).roleRef, (want as { roleRef?: unknown }).roleRef);
        if (same) return true;
        // roleRef is immutable: a binding to another role is replaced.
        await client.delete(CRB, NODEAGENT_CLIENT_BINDING, { preconditions: { ...(have.metadata?.uid ? { uid: have.metadata.uid } : {}) } });
        await client.create(CRB, want);
        return true;
      } catch (e) {
        if (e instanceof ApiError && (e.code === 409 || e.code === 404)) continue; // raced: read again
        throw e;
      }
    }
    throw new Error('the binding kept changing underneath');
  } catch (e) {
    log.error({ err: (e as Error).message, binding: NODEAGENT_CLIENT_BINDING }, 'cannot bind the API server\'s node agent client identity: logs, exec and port-forward will be refused by the node');
    return false;
  } finally {
    client.close();
  }
}
