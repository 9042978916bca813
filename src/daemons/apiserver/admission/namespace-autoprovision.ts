/**
 * NamespaceAutoProvision: creating a namespaced object in a namespace that does not exist
 * creates the namespace first (not on a dry run). Runs before NamespaceLifecycle, which then
 * finds the namespace.
 */
import type { AdmissionContext, AdmissionPlugin } from './types.js';
import { namespaceTerminating } from './namespace-lifecycle.js';

export function namespaceAutoProvision(ctx: AdmissionContext): AdmissionPlugin {
  const provision = async (namespace: string, dryRun: boolean, known: boolean | undefined | Promise<boolean | undefined>): Promise<void> => {
    if ((await known) !== undefined || dryRun || !ctx.createNamespace) return;
    await ctx.createNamespace(namespace);
  };
  return {
    name: 'NamespaceAutoProvision',
    handles: (op, def) => op === 'CREATE' && def.namespaced,
    admit(a) {
      const known = namespaceTerminating(ctx.store, a.namespace);
      if (known instanceof Promise || known === undefined) return provision(a.namespace, a.dryRun, known);
    },
  };
}
