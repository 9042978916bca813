/**
 * AlwaysPullImages: every container of a pod (init, regular, ephemeral) gets imagePullPolicy
 * Always on create and update, so a pod cannot use an image another pod pulled with its
 * credentials; validation refuses a pod write that would keep another policy.
 */
import { fieldErrors, errors, type FieldError } from '../../../api/meta/status.js';
import type { AdmissionAttributes, AdmissionPlugin } from './types.js';
import { isPod } from './types.js';

const LISTS = ['initContainers', 'containers', 'ephemeralContainers'] as const;

type Container = { imagePullPolicy?: unknown };

function containersOf(a: AdmissionAttributes): Array<[string, Container[]]> {
  const spec = a.object?.spec as Record<string, unknown> | undefined;
  if (!spec) return [];
  return LISTS.filter((l) => Array.isArray(spec[l])).map((l) => [l, (spec[l] as unknown[]).filter((c): c is Container => typeof c === 'object' && c !== null)]);
}

export function alwaysPullImages(): AdmissionPlugin {
  return {
    name: 'AlwaysPullImages',
    handles: (op, def, sub) => (op === 'CREATE' || op === 'UPDATE') && isPod(def) && (sub === '' || sub === 'ephemeralcontainers'),
    admit(a) {
      for (const [, cs] of containersOf(a)) for (const c of cs) c.imagePullPolicy = 'Always';
    },
    validate(a) {
      const errs: FieldError[] = [];
      for (const [list, cs] of containersOf(a)) {
        cs.forEach((c, i) => {
          if (c.imagePullPolicy !== 'Always') errs.push(fieldErrors.notSupported(`spec.${list}[${i}].imagePullPolicy`, c.imagePullPolicy, ['Always']));
        });
      }
      if (errs.length) throw errors.invalid(a.def.kind, a.def.group, a.name, errs);
    },
  };
}
