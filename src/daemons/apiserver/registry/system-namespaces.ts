/** The namespaces every cluster has, created on start when missing. */
import { isApiError } from '../../../api/meta/status.js';
import { namespaces } from '../../../api/resources/core/namespaces.js';
import type { ResourceRegistry } from './resource-registry.js';

export const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'] as const;

export async function ensureSystemNamespaces(registry: ResourceRegistry): Promise<void> {
  for (const name of SYSTEM_NAMESPACES) {
    try {
      await registry.create(namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }, { internal: true });
    } catch (e) {
      if (!isApiError(e, 'AlreadyExists')) throw e;
    }
  }
}
