/**
 * admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration: the webhooks the validating
 * webhook admission plugin calls. Cluster-scoped, no status; any change to `webhooks` bumps
 * metadata.generation, as upstream's strategy does.
 */
import { defineResource } from '../common/define.js';
import { defaultWebhooks, validateWebhooks, webhooksColumn } from './webhook-spec.js';

export const validatingwebhookconfigurations = defineResource({
  group: 'admissionregistration.k8s.io', versions: ['v1'], kind: 'ValidatingWebhookConfiguration',
  plural: 'validatingwebhookconfigurations', namespaced: false,
  categories: ['api-extensions'], hasGeneration: true,
  defaults(obj) { defaultWebhooks(obj, 'validating'); },
  validateSpec(obj, old) { return validateWebhooks(obj, old, 'validating'); },
  columns: [webhooksColumn],
});
