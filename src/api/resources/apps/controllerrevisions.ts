/** apps/v1 ControllerRevision (immutable data). */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { col, arr, rec, str } from '../common/table-util.js';
import { immutable } from '../common/validation.js';

export const controllerrevisions = defineResource({
  group: 'apps', versions: ['v1'], kind: 'ControllerRevision', plural: 'controllerrevisions', namespaced: true,
  validateSpec(obj, old) {
    const errs: FieldError[] = [];
    if (typeof obj.revision !== 'number' || obj.revision < 0) errs.push(fieldErrors.invalid('revision', obj.revision ?? null, 'must be greater than or equal to 0'));
    if (old) immutable(errs, 'data', obj.data, old.data);
    return errs;
  },
  columns: [
    col('Controller', 'string', 'Controller of the object', (o) => {
      const c = arr(o.metadata?.ownerReferences).map(rec).find((r) => r.controller === true);
      if (!c) return '<none>';
      const gv = str(c.apiVersion), g = gv.includes('/') ? gv.split('/')[0] : '';
      return `${str(c.kind).toLowerCase()}${g ? '.' + g : ''}/${str(c.name)}`;
    }),
    col('Revision', 'integer', 'Revision indicates the revision of the state represented by Data.', (o) => o.revision ?? 0),
  ],
});
