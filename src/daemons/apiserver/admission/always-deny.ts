/** AlwaysDeny: refuses every create, update and delete (for tests of the chain itself). */
import { errors } from '../../../api/meta/status.js';
import type { AdmissionPlugin } from './types.js';

export function alwaysDeny(): AdmissionPlugin {
  return {
    name: 'AlwaysDeny',
    handles: () => true,
    validate(a) {
      throw errors.admissionForbidden({ group: a.def.group, resource: a.def.plural, name: a.name }, 'admission control is denying all modifications');
    },
  };
}
