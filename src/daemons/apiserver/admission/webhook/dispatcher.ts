/**
 * What the two webhook plugins share: the configurations of their flavor, the rule index and
 * the caller, and the gate every write passes. Hot path: with no configuration of the flavor,
 * or none whose rules take the request, the gate answers at once with undefined (a few property
 * reads and map lookups, nothing allocated). Only until the configurations have been read once
 * does it wait, at most 10 s, then the write fails with 403 "not yet ready to handle request"
 * (Kubernetes' plugins wait for their informers the same way).
 *
 * Webhooks never see admissionregistration.k8s.io's own configuration kinds, so a broken
 * webhook can always be removed (Kubernetes exempts the same kinds).
 */
import { errors } from '../../../../api/meta/status.js';
import type { ResourceDefinition } from '../../../../api/resources/types.js';
import type { AdmissionAttributes, AdmissionContext, AdmissionResult, ConnectAttributes } from '../types.js';
import { webhookConfigSource, type WebhookConfigSource } from './config-source.js';
import { WebhookCaller } from './invoke.js';
import { NO_INVOCATIONS, RuleIndex, type Invocation } from './rules.js';
import { targetOf, type Target } from './versions.js';
import type { WebhookFlavor } from './webhook.js';

const EXEMPT_KINDS = new Set([
  'MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration', 'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding', 'MutatingAdmissionPolicy', 'MutatingAdmissionPolicyBinding',
]);

export function exemptFromWebhooks(def: ResourceDefinition): boolean {
  return def.group === 'admissionregistration.k8s.io' && EXEMPT_KINDS.has(def.kind);
}

const READY_WAIT_MS = 10_000;

/**
 * A CONNECT request as webhooks see it (Kubernetes' ConnectResource): operation CONNECT, the
 * connect options as the object, no old object, never a dry run.
 */
export function connectAttributes(a: ConnectAttributes): AdmissionAttributes | undefined {
  if (!a.options) return undefined;
  return {
    operation: 'CONNECT', def: a.def, subresource: a.subresource, namespace: a.namespace, name: a.name,
    object: a.options, dryRun: false, ...(a.request ? { request: a.request } : {}),
  };
}

/** Runs the matching webhooks of one request (in the requested target's terms). */
export type Dispatch = (a: AdmissionAttributes, invocations: readonly Invocation[], requested: Target) => Promise<void>;

export class WebhookDispatcher {
  readonly source: WebhookConfigSource;
  readonly caller: WebhookCaller;
  private readonly index: RuleIndex;

  constructor(ctx: AdmissionContext, flavor: WebhookFlavor) {
    this.source = webhookConfigSource(ctx.store, flavor, ctx.log?.child({ component: `${flavor}-webhooks` }));
    this.index = new RuleIndex(ctx.served ?? (() => true));
    this.caller = new WebhookCaller(ctx);
  }

  /** Undefined at once when no webhook's rules take the request; else `dispatch`'s promise. */
  run(a: AdmissionAttributes, dispatch: Dispatch): AdmissionResult {
    const source = this.source;
    if (!source.synced) return this.whenReady(a).then(() => this.run(a, dispatch));
    const webhooks = source.webhooks;
    if (webhooks.length === 0) return undefined;
    const version = a.request?.version ?? a.def.storageVersion;
    const object = a.object ?? a.oldObject;
    const invocations = this.index.invocations(webhooks, source.generation, a.operation, a.def, version, a.subresource, object);
    if (invocations === NO_INVOCATIONS) return undefined;
    return dispatch(a, invocations, targetOf(a.def, version, a.subresource, object));
  }

  private whenReady(a: AdmissionAttributes): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(errors.admissionForbidden({ group: a.def.group, resource: a.def.plural, name: a.name }, 'not yet ready to handle request')), READY_WAIT_MS);
    });
    return Promise.race([this.source.ready, timeout]).finally(() => clearTimeout(timer));
  }
}
