/**
 * core/v1 componentstatuses (`kubectl get cs`): cluster-scoped, read-only, computed on each
 * request by probing the control-plane components, never stored. Deprecated since 1.19 but
 * still served, so every answer carries the deprecation warning.
 */
import type { KubeObject, ResourceDefinition, TableColumn } from '../../../api/resources/types.js';
import type { ComponentCondition } from './probes.js';

/** The text of Kubernetes' deprecation warning for this kind. */
export const DEPRECATION_WARNING = 'v1 ComponentStatus is deprecated in v1.19+';

/** The Healthy condition, which is what kubectl's printer reads. */
function healthy(obj: KubeObject): ComponentCondition | undefined {
  const conditions = Array.isArray(obj.conditions) ? obj.conditions as Partial<ComponentCondition>[] : [];
  return conditions.find((c) => c?.type === 'Healthy') as ComponentCondition | undefined;
}

/** kubectl's STATUS: Healthy only for status True; Unknown when there is no Healthy condition. */
function statusCell(obj: KubeObject): string {
  const c = healthy(obj);
  if (!c) return 'Unknown';
  return c.status === 'True' ? 'Healthy' : 'Unhealthy';
}

const columns: TableColumn[] = [
  { name: 'Status', type: 'string', priority: 0, description: 'Status of the component conditions', cell: statusCell },
  { name: 'Message', type: 'string', priority: 0, description: 'Message of the component conditions', cell: (o) => healthy(o)?.message ?? '' },
  { name: 'Error', type: 'string', priority: 0, description: 'Error of the component conditions', cell: (o) => healthy(o)?.error ?? '' },
];

export const componentStatuses: ResourceDefinition = {
  group: '', versions: ['v1'], storageVersion: 'v1', kind: 'ComponentStatus', listKind: 'ComponentStatusList',
  plural: 'componentstatuses', singular: 'componentstatus', shortNames: ['cs'], namespaced: false,
  verbs: ['get', 'list'], tableColumns: columns,
};
