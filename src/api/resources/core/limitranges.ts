/** core/v1 LimitRange. */
import { defineResource } from '../common/define.js';
import { createdAtColumn } from '../common/table-util.js';

type Dict = Record<string, unknown>;
const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Kubernetes' LimitRangeItem defaults for type Container: the default limit falls back to max,
 * the default request to the default limit, then to min.
 */
function defaultItem(item: Dict): void {
  if (item.type !== 'Container') return;
  const fill = (into: Dict, from: unknown): void => {
    if (isDict(from)) for (const [k, v] of Object.entries(from)) if (into[k] === undefined) into[k] = v;
  };
  const def: Dict = isDict(item.default) ? item.default : {};
  fill(def, item.max);
  const req: Dict = isDict(item.defaultRequest) ? item.defaultRequest : {};
  fill(req, def);
  fill(req, item.min);
  if (Object.keys(def).length) item.default = def;
  if (Object.keys(req).length) item.defaultRequest = req;
}

export const limitranges = defineResource({
  group: '', versions: ['v1'], kind: 'LimitRange', plural: 'limitranges', namespaced: true,
  shortNames: ['limits'], noAge: true, columns: [createdAtColumn],
  defaults(obj) {
    const limits = isDict(obj.spec) && Array.isArray(obj.spec.limits) ? obj.spec.limits : [];
    for (const item of limits) if (isDict(item)) defaultItem(item);
  },
});
