/**
 * MutatingAdmissionWebhook: calls the mutating webhooks whose rules and selectors take a write,
 * one after another (configurations by name, webhooks in their listed order), each with the
 * object as the previous ones left it, in the version the webhook asked for. A JSONPatch answer
 * is applied to the object (then converted back and defaulted, as Kubernetes decodes and
 * defaults it).
 *
 * Reinvocation (reinvocationPolicy IfNeeded): when a webhook changes the object, the IfNeeded
 * webhooks called before it are called once more after the first round, in order, if their
 * selectors still take the request. Kubernetes also runs its built-in mutating plugins again in
 * that case; here they ran before the webhooks and are not run again.
 */
import { errors } from '../../../../api/meta/status.js';
import { deepEqual } from '../../../../api/resources/common/validation.js';
import { replaceInPlace } from '../../../../api/resources/common/conversion.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import { applyJsonPatch } from '../../../../api/patch/json-patch.js';
import type { AdmissionAttributes, AdmissionContext, AdmissionPlugin } from '../types.js';
import { connectAttributes, exemptFromWebhooks, WebhookDispatcher } from './dispatcher.js';
import { denial } from './invoke.js';
import type { Invocation } from './rules.js';
import { fromTargetVersion, toTargetVersion, type Target } from './versions.js';

export function mutatingAdmissionWebhook(ctx: AdmissionContext): AdmissionPlugin {
  const dispatcher = new WebhookDispatcher(ctx, 'mutating');
  const caller = dispatcher.caller;

  /** Calls one webhook; true when its patch changed the object. */
  async function callOne(a: AdmissionAttributes, inv: Invocation, requested: Target): Promise<boolean> {
    const w = inv.webhook, t = inv.target;
    const object = a.object ? toTargetVersion(a.def, a.object, t) : undefined;
    const oldObject = a.oldObject ? toTargetVersion(a.def, a.oldObject, t) : undefined;
    const result = await caller.call(a, inv, requested, object, oldObject);
    if (!result) return false;
    if (!result.allowed) throw denial(w.name, result.status);
    if (!result.patch) return false;
    const skip = (reason: string): false => {
      const e = caller.failed(w, reason);
      if (e) throw e;
      return false;
    };
    let ops: unknown;
    try { ops = JSON.parse(result.patch.toString('utf8')); } catch (e) { return skip(`received undecodable patch in webhook response: ${(e as Error).message}`); }
    if (!Array.isArray(ops)) return skip('received undecodable patch in webhook response: a JSON patch is a list of operations');
    if (ops.length === 0) return false;
    if (!a.object || !object) throw errors.internal(`admission webhook ${JSON.stringify(w.name)} attempted to modify the object, which is not supported for this operation`);
    if (result.patchType !== 'JSONPatch') return skip(`unsupported patch type ${JSON.stringify(result.patchType)}`);
    let patched: KubeObject;
    try {
      patched = applyJsonPatch(object, ops) as KubeObject;
    } catch (e) {
      throw errors.internal((e as Error).message);
    }
    if (typeof patched !== 'object' || patched === null || Array.isArray(patched)) throw errors.internal('the patched object is not an object');
    if (deepEqual(object, patched)) return false;
    const back = fromTargetVersion(a.def, patched, t);
    if (t.convertsObject) a.def.defaults?.(back);
    replaceInPlace(a.object, back);
    return true;
  }

  async function dispatch(a: AdmissionAttributes, invocations: readonly Invocation[], requested: Target): Promise<void> {
    const invokedReinvocable = new Set<string>();
    const toReinvoke = new Set<string>();
    for (const round of [0, 1]) {
      if (round === 1 && toReinvoke.size === 0) return;
      for (const inv of invocations) {
        const w = inv.webhook;
        if (round === 1 && !toReinvoke.has(w.uid)) continue;
        let selected = caller.selected(w, a);
        if (selected instanceof Promise) selected = await selected;
        if (!selected) continue;
        if (await callOne(a, inv, requested)) for (const uid of invokedReinvocable) toReinvoke.add(uid);
        if (w.reinvoke) invokedReinvocable.add(w.uid);
      }
    }
  }

  return {
    name: 'MutatingAdmissionWebhook',
    handles: (_op, def) => !exemptFromWebhooks(def),
    admit: (a) => dispatcher.run(a, dispatch),
    // CONNECT: called as Kubernetes calls them; a patch changes the options the connection is made with.
    handlesConnect: (def) => !exemptFromWebhooks(def),
    connect: (c) => { const a = connectAttributes(c); return a && dispatcher.run(a, dispatch); },
  };
}
