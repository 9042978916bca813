/** RBAC shared rules: role names are path segments; rules and subjects checks. */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { col, arr, rec, str, path } from '../common/table-util.js';
import type { KubeObject, TableColumn } from '../types.js';
import { sameInGoForm } from '../../codec/go-json.js';

export function validateRules(obj: KubeObject, errs: FieldError[]): void {
  arr(obj.rules).forEach((r, i) => {
    const rule = rec(r), f = `rules[${i}]`;
    if (!arr(rule.verbs).length) errs.push(fieldErrors.required(`${f}.verbs`, 'verbs must contain at least one value'));
    const nonResource = arr(rule.nonResourceURLs).length > 0;
    if (nonResource) {
      if (obj.kind === 'Role' || obj.metadata?.namespace) errs.push(fieldErrors.invalid(`${f}.nonResourceURLs`, rule.nonResourceURLs, 'namespaced rules cannot apply to non-resource URLs'));
      if (arr(rule.apiGroups).length || arr(rule.resources).length) errs.push(fieldErrors.invalid(`${f}.nonResourceURLs`, rule.nonResourceURLs, 'rules cannot apply to both regular resources and non-resource URLs'));
    } else {
      if (!arr(rule.apiGroups).length) errs.push(fieldErrors.required(`${f}.apiGroups`, 'resource rules must supply at least one api group'));
      if (!arr(rule.resources).length) errs.push(fieldErrors.required(`${f}.resources`, 'resource rules must supply at least one resource'));
    }
  });
}

export function validateBinding(obj: KubeObject, errs: FieldError[], old?: KubeObject): void {
  const ref = rec(obj.roleRef);
  if (!['Role', 'ClusterRole'].includes(str(ref.kind))) errs.push(fieldErrors.notSupported('roleRef.kind', ref.kind, obj.kind === 'ClusterRoleBinding' ? ['ClusterRole'] : ['Role', 'ClusterRole']));
  if (obj.kind === 'ClusterRoleBinding' && ref.kind === 'Role') errs.push(fieldErrors.notSupported('roleRef.kind', ref.kind, ['ClusterRole']));
  if (str(ref.apiGroup) !== 'rbac.authorization.k8s.io') errs.push(fieldErrors.notSupported('roleRef.apiGroup', ref.apiGroup ?? '', ['rbac.authorization.k8s.io']));
  if (!str(ref.name)) errs.push(fieldErrors.required('roleRef.name'));
  arr(obj.subjects).forEach((s, i) => {
    const sub = rec(s), f = `subjects[${i}]`;
    if (!['ServiceAccount', 'User', 'Group'].includes(str(sub.kind))) errs.push(fieldErrors.notSupported(`${f}.kind`, sub.kind, ['ServiceAccount', 'User', 'Group']));
    if (!str(sub.name)) errs.push(fieldErrors.required(`${f}.name`));
    if (sub.kind === 'ServiceAccount' && obj.kind === 'ClusterRoleBinding' && !str(sub.namespace)) errs.push(fieldErrors.required(`${f}.namespace`));
  });
  if (old && !sameInGoForm('k8s.io.api.rbac.v1.RoleRef', obj.roleRef, old.roleRef)) errs.push(fieldErrors.invalid('roleRef', obj.roleRef, 'cannot change roleRef'));
}

export function defaultSubjects(obj: KubeObject): void {
  for (const s of arr(obj.subjects)) {
    const sub = rec(s);
    if ((sub.kind === 'User' || sub.kind === 'Group') && sub.apiGroup === undefined) sub.apiGroup = 'rbac.authorization.k8s.io';
    if (sub.kind === 'ServiceAccount' && sub.apiGroup === undefined) sub.apiGroup = '';
  }
}

const subjectsOf = (o: KubeObject, kind: string): string => arr(o.subjects).map(rec).filter((s) => s.kind === kind)
  .map((s) => kind === 'ServiceAccount' ? `${str(s.namespace)}/${str(s.name)}` : str(s.name)).join(', ');

export const bindingColumns = (): TableColumn[] => [
  col('Role', 'string', 'RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace.', (o) => `${str(path(o, 'roleRef.kind'))}/${str(path(o, 'roleRef.name'))}`),
];
export const bindingWideColumns = (): TableColumn[] => [
  col('Users', 'string', 'Users in the roleBinding', (o) => subjectsOf(o, 'User'), 1),
  col('Groups', 'string', 'Groups in the roleBinding', (o) => subjectsOf(o, 'Group'), 1),
  col('ServiceAccounts', 'string', 'ServiceAccounts in the roleBinding', (o) => subjectsOf(o, 'ServiceAccount'), 1),
];
