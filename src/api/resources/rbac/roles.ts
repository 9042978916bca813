/** rbac.authorization.k8s.io/v1 Role. */
import { type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { createdAtColumn } from '../common/table-util.js';
import { pathSegmentName } from '../common/validation.js';
import { validateRules } from './common.js';

export const roles = defineResource({
  group: 'rbac.authorization.k8s.io', versions: ['v1'], kind: 'Role', plural: 'roles', namespaced: true,
  nameValidator: pathSegmentName,
  validateSpec(obj) { const errs: FieldError[] = []; validateRules(obj, errs); return errs; },
  noAge: true, columns: [createdAtColumn],
});
