/** core/v1 ResourceQuota. */
import { defineResource, statusStrategy } from '../common/define.js';
import { ageColumn, col, rec, path } from '../common/table-util.js';
import type { KubeObject } from '../types.js';

function usage(o: KubeObject, limits: boolean): string {
  const hard = rec(path(o, 'status.hard')), used = rec(path(o, 'status.used'));
  return Object.keys(hard).filter((k) => k.startsWith('limits.') === limits && (limits || !k.startsWith('limits.'))).sort()
    .map((k) => `${k}: ${String(used[k] ?? '0')}/${String(hard[k])}`).join(', ');
}

export const resourcequotas = defineResource({
  group: '', versions: ['v1'], kind: 'ResourceQuota', plural: 'resourcequotas', namespaced: true,
  shortNames: ['quota'], subresources: { status: true },
  prepareForCreate(obj) { delete obj.status; },
  prepareForUpdate: statusStrategy.prepareForUpdate,
  tableColumns: [
    ageColumn,
    col('Request', 'string', 'Request represents a minimum amount of cpu/memory that a container may consume.', (o) => usage(o, false)),
    col('Limit', 'string', 'Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.', (o) => usage(o, true)),
  ],
});
