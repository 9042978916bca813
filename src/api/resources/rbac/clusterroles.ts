/** rbac.authorization.k8s.io/v1 ClusterRole. */
import { type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { createdAtColumn } from '../common/table-util.js';
import { pathSegmentName } from '../common/validation.js';
import { validateRules } from './common.js';

export const clusterroles = defineResource({
  group: 'rbac.authorization.k8s.io', versions: ['v1'], kind: 'ClusterRole', plural: 'clusterroles', namespaced: false,
  nameValidator: pathSegmentName,
  defaults(obj) { if (obj.aggregationRule && !Array.isArray(obj.rules)) obj.rules = []; },
  validateSpec(obj) { const errs: FieldError[] = []; validateRules(obj, errs); return errs; },
  noAge: true, columns: [createdAtColumn],
});
