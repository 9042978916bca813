/** rbac.authorization.k8s.io/v1 RoleBinding (roleRef immutable). */
import { type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { pathSegmentName } from '../common/validation.js';
import { bindingColumns, bindingWideColumns, defaultSubjects, validateBinding } from './common.js';

export const rolebindings = defineResource({
  group: 'rbac.authorization.k8s.io', versions: ['v1'], kind: 'RoleBinding', plural: 'rolebindings', namespaced: true,
  nameValidator: pathSegmentName,
  defaults: defaultSubjects,
  validateSpec(obj, old) { const errs: FieldError[] = []; validateBinding(obj, errs, old); return errs; },
  columns: bindingColumns(), wideColumns: bindingWideColumns(),
});
