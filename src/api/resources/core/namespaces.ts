/** core/v1 Namespace: finalizer `kubernetes`, phase Active/Terminating, namespaces/finalize. */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { col, str, path, arr } from '../common/table-util.js';
import { dns1123Label, qualifiedName, pushAll } from '../common/validation.js';

export const namespaces = defineResource({
  group: '', versions: ['v1'], kind: 'Namespace', plural: 'namespaces', namespaced: false,
  shortNames: ['ns'],
  verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
  nameValidator: dns1123Label,
  subresources: {
    status: true,
    extra: [{ name: 'finalize', verbs: ['update'], kind: { group: '', version: 'v1', kind: 'Namespace' } }],
  },
  defaults(obj) {
    obj.metadata ??= {};
    obj.metadata.labels = { ...(obj.metadata.labels ?? {}), 'kubernetes.io/metadata.name': obj.metadata.name ?? '' };
  },
  validateSpec(obj) {
    const errs: FieldError[] = [];
    arr(path(obj, 'spec.finalizers')).forEach((f, i) => {
      if (typeof f !== 'string') errs.push(fieldErrors.typeInvalid(`spec.finalizers[${i}]`, f, 'must be a string'));
      else pushAll(errs, `spec.finalizers[${i}]`, f, qualifiedName(f));
    });
    return errs;
  },
  prepareForCreate(obj) {
    obj.spec = { finalizers: ['kubernetes'] };
    obj.status = { phase: 'Active' };
  },
  prepareForUpdate(obj, old) {
    // spec.finalizers change only through namespaces/finalize.
    obj.spec = old.spec;
    obj.status = old.status;
  },
  fieldSelectors: { 'status.phase': (o) => str(path(o, 'status.phase')) },
  columns: [col('Status', 'string', 'The status of the namespace', (o) => str(path(o, 'status.phase')))],
});
