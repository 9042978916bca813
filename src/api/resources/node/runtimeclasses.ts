/**
 * node.k8s.io/v1 RuntimeClass: names a container runtime configuration (`handler`, a DNS label
 * the node's CRI runtime knows, fixed once created), with the resources a pod using it costs on
 * top of its containers (`overhead.podFixed`) and where such pods may run (`scheduling`).
 * Kubernetes validates the whole object again on update.
 */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { col, str } from '../common/table-util.js';
import { dns1123Label, immutable, isObject, pushAll, validateLabels } from '../common/validation.js';
import type { KubeObject } from '../types.js';
import { validateContainerLimits } from './container-resources.js';
import { validateTolerations } from '../common/tolerations.js';

/** Tolerations are a list keyed by key, operator, value and effect: one of each at most. */
function duplicateTolerations(tolerations: unknown, field: string, errs: FieldError[]): void {
  if (!Array.isArray(tolerations)) return;
  const seen = new Set<string>();
  tolerations.forEach((t: unknown, i: number) => {
    if (!isObject(t)) return;
    const key = JSON.stringify([t.key ?? '', t.operator ?? '', t.value ?? '', t.effect ?? '']);
    if (seen.has(key)) errs.push(fieldErrors.duplicate(`${field}[${i}]`, t));
    seen.add(key);
  });
}

function validate(obj: KubeObject, old: KubeObject | undefined): FieldError[] {
  const errs: FieldError[] = [];
  const handler = typeof obj.handler === 'string' ? obj.handler : '';
  pushAll(errs, 'handler', handler, dns1123Label(handler));
  if (isObject(obj.overhead)) {
    // Kubernetes checks podFixed as container limits and names the paths that way.
    validateContainerLimits(obj.overhead.podFixed, 'overhead', errs);
  }
  if (isObject(obj.scheduling)) {
    validateLabels(obj.scheduling.nodeSelector, 'scheduling.nodeSelector', errs);
    validateTolerations(obj.scheduling.tolerations, 'scheduling.tolerations', errs);
    duplicateTolerations(obj.scheduling.tolerations, 'scheduling.tolerations', errs);
  }
  if (old) immutable(errs, 'handler', obj.handler, old.handler);
  return errs;
}

export const runtimeclasses = defineResource({
  group: 'node.k8s.io', versions: ['v1'], kind: 'RuntimeClass', plural: 'runtimeclasses', namespaced: false,
  validateSpec: validate,
  // Kubernetes' printer gives this column an empty description.
  columns: [col('Handler', 'string', '', (o) => str(o.handler))],
});
