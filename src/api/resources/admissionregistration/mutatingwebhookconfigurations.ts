/**
 * admissionregistration.k8s.io/v1 MutatingWebhookConfiguration: the webhooks the mutating
 * webhook admission plugin calls. Cluster-scoped, no status; any change to `webhooks` bumps
 * metadata.generation, as upstream's strategy does.
 */
import { defineResource } from '../common/define.js';
import { defaultWebhooks, validateWebhooks, webhooksColumn } from './webhook-spec.js';

export const mutatingwebhookconfigurations = defineResource({
  group: 'admissionregistration.k8s.io', versions: ['v1'], kind: 'MutatingWebhookConfiguration',
  plural: 'mutatingwebhookconfigurations', namespaced: false,
  categories: ['api-extensions'], hasGeneration: true,
  defaults(obj) { defaultWebhooks(obj, 'mutating'); },
  validateSpec(obj, old) { return validateWebhooks(obj, old, 'mutating'); },
  columns: [webhooksColumn],
});
