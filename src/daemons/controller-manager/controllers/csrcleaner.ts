/**
 * The CSR cleaner: automated requests and approvals only ever add CertificateSigningRequests, so
 * a periodic sweep over the cached ones (hourly, as in Kubernetes) deletes those that are done:
 *  - Approved with a certificate, Denied, or Failed, whose condition is more than 1 h old;
 *  - Pending (no condition at all) and created more than 24 h ago;
 *  - Approved with a certificate that has expired.
 * A condition's age is its lastUpdateTime (lastTransitionTime when that is missing: Kubernetes'
 * API server always fills both, ours does not); a condition without either never ages.
 * An approved request still waiting for its certificate is kept, as Kubernetes keeps it.
 *
 * Contract: sweeps never overlap; every delete names the request's uid (one re-created under
 * the same name is never hit); failures are logged and retried by the next sweep.
 */
import { X509Certificate } from 'node:crypto';
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import type { RestClient, SharedIndexInformer } from '../deps.js';
import { APPROVED, CERTIFICATES_V1, certificateOf, conditionsOf, DENIED, FAILED, type CsrCondition } from './csr/conditions.js';

export const POLLING_INTERVAL_MS = 3600_000;
export const APPROVED_EXPIRATION_MS = 3600_000;
export const DENIED_EXPIRATION_MS = 3600_000;
export const PENDING_EXPIRATION_MS = 24 * 3600_000;

export interface CsrCleanerOptions {
  /** Time between sweeps. @default 1 h */
  periodMs?: number;
  /** The clock (ms since the epoch) requests are aged by; Date.now by default. */
  now?: () => number;
}

/** Older than `d` at `now`; an absent or unparsable time is never old (Go's zero time). */
function olderThan(time: string | undefined, d: number, now: number): boolean {
  const t = time ? Date.parse(time) : NaN;
  return !Number.isNaN(t) && now - t > d;
}

const conditionTime = (c: CsrCondition): string | undefined => c.lastUpdateTime || c.lastTransitionTime;

/** True when the issued certificate's notAfter has passed; an unreadable one never expires. */
function certificateExpired(csr: KubeObject, now: number): boolean {
  const b64 = certificateOf(csr);
  if (!b64) return false;
  try {
    return now > Date.parse(new X509Certificate(Buffer.from(b64, 'base64')).validTo);
  } catch {
    return false;
  }
}

/** Why `csr` is to be deleted at `now`, or undefined to keep it. */
export function cleanupReason(csr: KubeObject, now: number): string | undefined {
  const conditions = conditionsOf(csr);
  const issued = certificateOf(csr) !== '';
  for (const c of conditions) {
    if (c.type === APPROVED && issued && olderThan(conditionTime(c), APPROVED_EXPIRATION_MS, now)) return 'approved and issued more than 1h ago';
  }
  for (const c of conditions) {
    if (c.type === DENIED && olderThan(conditionTime(c), DENIED_EXPIRATION_MS, now)) return 'denied more than 1h ago';
  }
  for (const c of conditions) {
    if (c.type === FAILED && olderThan(conditionTime(c), DENIED_EXPIRATION_MS, now)) return 'failed more than 1h ago';
  }
  if (conditions.length === 0 && olderThan(csr.metadata?.creationTimestamp ?? undefined, PENDING_EXPIRATION_MS, now)) return 'pending for more than 24h';
  if (issued && conditions.some((c) => c.type === APPROVED) && certificateExpired(csr, now)) return 'its certificate has expired';
  return undefined;
}

export class CsrCleanerController implements Controller {
  readonly name = 'csrcleaner';
  private csrs!: SharedIndexInformer;
  private client!: RestClient;
  private log!: Logger;
  private readonly now: () => number;

  constructor(private readonly opts: CsrCleanerOptions = {}) { this.now = opts.now ?? Date.now; }

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    this.csrs = ctx.informers.informerFor(CERTIFICATES_V1);
    ctx.informers.start(ctx.signal);
    if (!(await this.csrs.waitForSync(ctx.signal))) return;
    const period = this.opts.periodMs ?? POLLING_INTERVAL_MS;
    while (!ctx.signal.aborted) {
      await this.sweep();
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => { ctx.signal.removeEventListener('abort', stop); resolve(); }, period);
        const stop = (): void => { clearTimeout(t); resolve(); };
        ctx.signal.addEventListener('abort', stop, { once: true });
      });
    }
  }

  /** One pass over the cached requests. */
  async sweep(): Promise<void> {
    const now = this.now();
    for (const csr of this.csrs.indexer.list()) {
      const reason = cleanupReason(csr, now);
      if (!reason) continue;
      const name = csr.metadata?.name ?? '';
      try {
        await this.client.delete(CERTIFICATES_V1, name, { preconditions: { uid: csr.metadata?.uid ?? '' } });
        this.log.info({ csr: name, reason }, 'deleted certificate signing request');
      } catch (e) {
        if (isApiError(e) && (e.code === 404 || e.code === 409)) continue;
        this.log.warn({ csr: name, err: (e as Error).message }, 'deleting certificate signing request failed');
      }
    }
  }
}

export function newCsrCleanerController(opts: CsrCleanerOptions = {}): Controller {
  return new CsrCleanerController(opts);
}
