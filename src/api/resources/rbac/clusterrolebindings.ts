/** rbac.authorization.k8s.io/v1 ClusterRoleBinding (roleRef immutable). */
import { type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { pathSegmentName } from '../common/validation.js';
import { bindingColumns, bindingWideColumns, defaultSubjects, validateBinding } from './common.js';

export const clusterrolebindings = defineResource({
  group: 'rbac.authorization.k8s.io', versions: ['v1'], kind: 'ClusterRoleBinding', plural: 'clusterrolebindings', namespaced: false,
  nameValidator: pathSegmentName,
  defaults: defaultSubjects,
  validateSpec(obj, old) { const errs: FieldError[] = []; validateBinding(obj, errs, old); return errs; },
  columns: bindingColumns(), wideColumns: bindingWideColumns(),
});
