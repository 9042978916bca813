/** core/v1 LimitRange. */
import { defineResource } from '../common/define.js';
import { createdAtColumn } from '../common/table-util.js';

export const limitranges = defineResource({
  group: '', versions: ['v1'], kind: 'LimitRange', plural: 'limitranges', namespaced: true,
  shortNames: ['limits'], noAge: true, columns: [createdAtColumn],
});
