/**
 * The whole bootstrap policy, in the order reconciliation writes it: roles before the bindings
 * that reference them, cluster-scoped before namespaced.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { defaultClusterRoleBindings } from './cluster-role-bindings.js';
import { defaultClusterRoles } from './cluster-roles.js';
import { controllerRoleBindings, controllerRoles } from './controller-roles.js';
import { defaultRoleBindings, defaultRoles } from './namespace-roles.js';

export interface BootstrapPolicy {
  clusterRoles: KubeObject[];
  clusterRoleBindings: KubeObject[];
  roles: KubeObject[];
  roleBindings: KubeObject[];
}

export function bootstrapPolicy(): BootstrapPolicy {
  return {
    clusterRoles: [...defaultClusterRoles(), ...controllerRoles()],
    clusterRoleBindings: [...defaultClusterRoleBindings(), ...controllerRoleBindings()],
    roles: defaultRoles(),
    roleBindings: defaultRoleBindings(),
  };
}
