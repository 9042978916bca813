/** core/v1 ServiceAccount (serviceaccounts/token is served by the auth layer). */
import { defineResource } from '../common/define.js';
import { col, arr } from '../common/table-util.js';

export const serviceaccounts = defineResource({
  group: '', versions: ['v1'], kind: 'ServiceAccount', plural: 'serviceaccounts', namespaced: true,
  shortNames: ['sa'],
  subresources: { extra: [{ name: 'token', verbs: ['create'], kind: { group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest' } }] },
  columns: [col('Secrets', 'string', 'Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.', (o) => String(arr(o.secrets).length))],
});
