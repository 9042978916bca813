/**
 * The default Roles and RoleBindings in kube-system and kube-public (Kubernetes'
 * bootstrappolicy namespace_policy.go): the reader of the extension-apiserver-authentication
 * config map, the leader-election locks of the controller manager and the scheduler, and the
 * bootstrap-token controllers' access to kube-system secrets and kube-public's cluster-info.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { eventsRule, G, READ, role, roleBinding, rule, serviceAccount, user } from './builders.js';

const SYSTEM = 'kube-system';
const PUBLIC = 'kube-public';
const LOCK_VERBS = ['get', 'list', 'watch', 'create', 'update'];

const controllerSa = (name: string): ReturnType<typeof serviceAccount> => serviceAccount(SYSTEM, name);

export function defaultRoles(): KubeObject[] {
  return [
    role(PUBLIC, 'system:controller:bootstrap-signer', [
      rule(READ, [G.core], ['configmaps']),
      rule(['update'], [G.core], ['configmaps'], ['cluster-info']),
      eventsRule(),
    ]),
    // Extension API servers read the front proxy's and client CA data from this config map.
    role(SYSTEM, 'extension-apiserver-authentication-reader', [
      rule(READ, [G.core], ['configmaps'], ['extension-apiserver-authentication']),
    ]),
    role(SYSTEM, 'system::leader-locking-kube-controller-manager', [
      rule(LOCK_VERBS, [G.coordination], ['leases']),
      rule(LOCK_VERBS, [G.coordination], ['leasecandidates']),
    ]),
    role(SYSTEM, 'system::leader-locking-kube-scheduler', [
      rule(LOCK_VERBS, [G.coordination], ['leases']),
      rule(LOCK_VERBS, [G.coordination], ['leasecandidates']),
    ]),
    role(SYSTEM, 'system:controller:bootstrap-signer', [rule(READ, [G.core], ['secrets'])]),
    role(SYSTEM, 'system:controller:cloud-provider', [rule(['create', 'get', 'list', 'watch'], [G.core], ['configmaps'])]),
    role(SYSTEM, 'system:controller:token-cleaner', [
      rule(['delete', 'get', 'list', 'watch'], [G.core], ['secrets']),
      eventsRule(),
    ]),
  ];
}

export function defaultRoleBindings(): KubeObject[] {
  return [
    roleBinding(PUBLIC, 'system:controller:bootstrap-signer', 'system:controller:bootstrap-signer', [controllerSa('bootstrap-signer')]),
    roleBinding(SYSTEM, 'system::extension-apiserver-authentication-reader', 'extension-apiserver-authentication-reader',
      [user('system:kube-controller-manager'), user('system:kube-scheduler')]),
    roleBinding(SYSTEM, 'system::leader-locking-kube-controller-manager', 'system::leader-locking-kube-controller-manager',
      [user('system:kube-controller-manager'), controllerSa('kube-controller-manager'), controllerSa('leader-election-controller')]),
    roleBinding(SYSTEM, 'system::leader-locking-kube-scheduler', 'system::leader-locking-kube-scheduler',
      [user('system:kube-scheduler'), controllerSa('kube-scheduler')]),
    roleBinding(SYSTEM, 'system:controller:bootstrap-signer', 'system:controller:bootstrap-signer', [controllerSa('bootstrap-signer')]),
    roleBinding(SYSTEM, 'system:controller:cloud-provider', 'system:controller:cloud-provider', [controllerSa('cloud-provider')]),
    roleBinding(SYSTEM, 'system:controller:token-cleaner', 'system:controller:token-cleaner', [controllerSa('token-cleaner')]),
  ];
}
