/** core/v1 PodTemplate. */
import { type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { col, templateContainers, templateImages, rec, path } from '../common/table-util.js';
import { defaultPodTemplate, validatePodTemplate } from './pod-spec.js';

export const podtemplates = defineResource({
  group: '', versions: ['v1'], kind: 'PodTemplate', plural: 'podtemplates', namespaced: true,
  defaults(obj) { defaultPodTemplate(obj.template); },
  validateSpec(obj) { const errs: FieldError[] = []; validatePodTemplate(obj.template, 'template', errs); return errs; },
  noAge: true,
  columns: [
    col('Containers', 'string', 'Names of each container in the template.', (o) => templateContainers(o, 'template.spec.containers')),
    col('Images', 'string', 'Images referenced by each container in the template.', (o) => templateImages(o, 'template.spec.containers')),
    col('Pod Labels', 'string', 'The labels for the pod template.', (o) => Object.entries(rec(path(o, 'template.metadata.labels'))).map(([k, v]) => `${k}=${String(v)}`).join(',')),
  ],
});
