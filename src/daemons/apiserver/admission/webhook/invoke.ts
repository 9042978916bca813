/**
 * Calling one webhook for one request, and what its outcome means for the request, as
 * Kubernetes' dispatchers decide:
 *
 * - a dry run goes only to webhooks with sideEffects None or NoneOnDryRun; any other webhook
 *   that matches fails the request with 400 `admission webhook "<name>" does not support dry run`
 *   whatever its failurePolicy;
 * - a call that fails (resolving, connecting, TLS, timeoutSeconds, a status outside 2xx, a
 *   response breaking the protocol) fails the request with 500 InternalError
 *   `failed calling webhook "<name>": ...` under failurePolicy Fail, and is logged and skipped
 *   under Ignore;
 * - a denial fails the request with the webhook's status: its code (400 when it gives none, or
 *   one below 400), reason and details, and the message
 *   `admission webhook "<name>" denied the request: <message, else reason>`
 *   (`... denied the request without explanation` when it gives neither);
 * - warnings go to the response's Warning headers.
 */
import type { Logger } from 'pino';
import { ApiError, errors, type StatusDetails, type StatusReason } from '../../../../api/meta/status.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import type { AdmissionAttributes, AdmissionContext } from '../types.js';
import { postReview } from './call.js';
import { buildReview, verifyResponse, type ReviewResult } from './review.js';
import type { Invocation } from './rules.js';
import { matchesNamespaceSelector, matchesObjectSelector } from './selectors.js';
import { callTargetOf } from './target.js';
import type { Target } from './versions.js';
import type { Webhook } from './webhook.js';

/** The request's status when a webhook denies it. */
export function denial(webhook: string, status: Record<string, unknown> | undefined): ApiError {
  const s = status ?? {};
  const deniedBy = `admission webhook ${JSON.stringify(webhook)} denied the request`;
  const message = typeof s.message === 'string' && s.message ? `${deniedBy}: ${s.message}`
    : typeof s.reason === 'string' && s.reason ? `${deniedBy}: ${s.reason}` : `${deniedBy} without explanation`;
  const code = typeof s.code === 'number' && s.code >= 400 ? s.code : 400;
  const reason = (typeof s.reason === 'string' ? s.reason : '') as StatusReason;
  const details = typeof s.details === 'object' && s.details !== null ? s.details as StatusDetails : undefined;
  return new ApiError(code, reason, message, details);
}

const NO_DRY_RUN_SIDE_EFFECTS = new Set(['None', 'NoneOnDryRun']);

export class WebhookCaller {
  private readonly log?: Logger;

  constructor(private readonly ctx: AdmissionContext) {
    this.log = ctx.log;
  }

  /** Whether the webhook's selectors take the request (its rules already do). */
  selected(w: Webhook, a: AdmissionAttributes): boolean | Promise<boolean> {
    if (!matchesObjectSelector(w.objectSelector, a)) return false;
    return matchesNamespaceSelector(this.ctx.store, w.namespaceSelector, a);
  }

  /**
   * A call that did not work: the request's error under failurePolicy Fail; under Ignore
   * undefined after logging it (the webhook is skipped).
   */
  failed(w: Webhook, reason: string): ApiError | undefined {
    const message = `failed calling webhook ${JSON.stringify(w.name)}: ${reason}`;
    if (w.failOpen) {
      this.log?.warn({ webhook: w.name, configuration: w.configName }, `Failed calling webhook, failing open ${w.name}: ${message}`);
      return undefined;
    }
    this.log?.warn({ webhook: w.name, configuration: w.configName }, `Failed calling webhook, failing closed ${w.name}: ${message}`);
    return errors.internal(message);
  }

  /**
   * Calls the webhook with the objects already in the invocation's version. The verdict, or
   * undefined when the call failed open; throws the request's error otherwise (a denial is
   * left to the caller, which knows the phase).
   */
  async call(a: AdmissionAttributes, inv: Invocation, requested: Target, object: KubeObject | undefined, oldObject: KubeObject | undefined): Promise<ReviewResult | undefined> {
    const w = inv.webhook;
    const mutating = w.flavor === 'mutating';
    const fail = (reason: string): undefined => {
      const e = this.failed(w, reason);
      if (e) throw e;
      return undefined;
    };
    if (a.dryRun) {
      if (w.sideEffects === '') return fail('Webhook SideEffects is nil');
      if (!NO_DRY_RUN_SIDE_EFFECTS.has(w.sideEffects)) throw errors.badRequest(`admission webhook ${JSON.stringify(w.name)} does not support dry run`);
    }
    if (!w.reviewVersion) return fail('could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)');
    const review = buildReview(a, inv, requested, object, oldObject);
    let body: unknown;
    try {
      body = await postReview(callTargetOf(this.ctx.store, w.client), review.body, w.timeoutSeconds, this.ctx.webhookClientCert);
    } catch (e) {
      return fail(`failed to call webhook: ${(e as Error).message}`);
    }
    let result: ReviewResult;
    try {
      result = verifyResponse(body, review.uid, mutating, w.reviewVersion);
    } catch (e) {
      return fail(`received invalid webhook response: ${(e as Error).message}`);
    }
    if (result.warnings.length) a.request?.warnings?.push(...result.warnings);
    return result;
  }
}
