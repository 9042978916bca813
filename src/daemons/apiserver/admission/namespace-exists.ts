/** NamespaceExists: a namespaced object can only be created in a namespace that exists. */
import { errors } from '../../../api/meta/status.js';
import type { AdmissionContext, AdmissionPlugin } from './types.js';
import { namespaceTerminating } from './namespace-lifecycle.js';

export function namespaceExists(ctx: AdmissionContext): AdmissionPlugin {
  const check = (namespace: string, t: boolean | undefined): void => {
    if (t === undefined) throw errors.notFound({ resource: 'namespaces', name: namespace });
  };
  return {
    name: 'NamespaceExists',
    handles: (op, def) => op === 'CREATE' && def.namespaced,
    admit(a) {
      const t = namespaceTerminating(ctx.store, a.namespace);
      if (t instanceof Promise) return t.then((v) => check(a.namespace, v));
      check(a.namespace, t);
    },
  };
}
