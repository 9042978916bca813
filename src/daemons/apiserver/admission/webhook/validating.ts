/**
 * ValidatingAdmissionWebhook: calls the validating webhooks whose rules and selectors take a
 * write, all at once, with the final object (after every mutation and the resource's own
 * validation), each in the version it asked for; or a CONNECT (exec, attach, port-forward,
 * proxy) with its connect options as the object. Every call is awaited; when several fail, the
 * request fails with the first failure in webhook order (Kubernetes reports the first to
 * arrive).
 */
import type { AdmissionAttributes, AdmissionContext, AdmissionPlugin } from '../types.js';
import { connectAttributes, exemptFromWebhooks, WebhookDispatcher } from './dispatcher.js';
import { denial } from './invoke.js';
import type { Invocation } from './rules.js';
import { toTargetVersion, type Target } from './versions.js';

export function validatingAdmissionWebhook(ctx: AdmissionContext): AdmissionPlugin {
  const dispatcher = new WebhookDispatcher(ctx, 'validating');
  const caller = dispatcher.caller;

  async function callOne(a: AdmissionAttributes, inv: Invocation, requested: Target): Promise<void> {
    const w = inv.webhook, t = inv.target;
    if (!(await caller.selected(w, a))) return;
    const object = a.object ? toTargetVersion(a.def, a.object, t) : undefined;
    const oldObject = a.oldObject ? toTargetVersion(a.def, a.oldObject, t) : undefined;
    const result = await caller.call(a, inv, requested, object, oldObject);
    if (result && !result.allowed) throw denial(w.name, result.status);
  }

  async function dispatch(a: AdmissionAttributes, invocations: readonly Invocation[], requested: Target): Promise<void> {
    const outcomes = await Promise.allSettled(invocations.map((inv) => callOne(a, inv, requested)));
    for (const o of outcomes) if (o.status === 'rejected') throw o.reason;
  }

  return {
    name: 'ValidatingAdmissionWebhook',
    handles: (_op, def) => !exemptFromWebhooks(def),
    validate: (a) => dispatcher.run(a, dispatch),
    handlesConnect: (def) => !exemptFromWebhooks(def),
    connect: (c) => { const a = connectAttributes(c); return a && dispatcher.run(a, dispatch); },
  };
}
