/**
 * The built-in PriorityClasses (system-node-critical, system-cluster-critical), created on start
 * when missing, as Kubernetes' scheduling bootstrap does: one that was deleted (possible only
 * with the Priority admission plugin off) comes back on the next start; one that exists is left
 * as it is.
 */
import { isApiError } from '../../../api/meta/status.js';
import { priorityclasses, SYSTEM_PRIORITY_CLASSES } from '../../../api/resources/scheduling/priorityclasses.js';
import type { ResourceRegistry } from './resource-registry.js';

export async function ensureSystemPriorityClasses(registry: ResourceRegistry): Promise<void> {
  for (const c of SYSTEM_PRIORITY_CLASSES) {
    try {
      await registry.create(priorityclasses, {
        apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: c.name }, value: c.value, description: c.description,
      }, { internal: true });
    } catch (e) {
      if (!isApiError(e, 'AlreadyExists')) throw e;
    }
  }
}
