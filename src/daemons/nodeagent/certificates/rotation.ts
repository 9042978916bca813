/**
 * Certificate rotation (--rotate-certificates; and the serving certificate with gate
 * RotateNodeagentServerCertificate), as Kubernetes' certificate manager: a new pair is requested
 * at a jittered 70–90 % of the current certificate's life (notBefore + total × (0.7 + 0.2 × r)),
 * with a fresh key, authenticated as the node itself (so csrapproving checks selfnodeclient).
 * The new pair is stored in --cert-dir (current symlink) and handed to `onRotated`, which makes
 * new connections use it: no restart. A failed request is retried, 2 s doubling to 5 min.
 */
import type { Logger } from 'pino';
import type { RestClient } from '../../../client/rest-client.js';
import { sleep } from './bootstrap.js';
import { storePair, type StoredPair } from './cert-store.js';
import { requestCertificate, type CertificateRequest } from './csr.js';

/** The longest single timer: Node clamps larger setTimeout values to 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** When to ask for the next certificate: notBefore + total × [0.7, 0.9). */
export function rotationDeadline(pair: Pick<StoredPair, 'notBefore' | 'notAfter'>, random: () => number = Math.random): number {
  const total = pair.notAfter - pair.notBefore;
  return pair.notBefore + total * (0.7 + 0.2 * random());
}

export interface RotatorOptions {
  readonly client: RestClient;
  readonly certDir: string;
  readonly prefix: string;
  /** What to ask for (evaluated at each rotation: a node's addresses may change). */
  readonly request: () => CertificateRequest;
  readonly onRotated: (pair: StoredPair) => void | Promise<void>;
  readonly log: Logger;
  readonly random?: () => number;
  readonly now?: () => number;
}

export class CertificateRotator {
  private current: StoredPair | undefined;
  private readonly now: () => number;

  constructor(private readonly o: RotatorOptions, initial: StoredPair | undefined) {
    this.current = initial;
    this.now = o.now ?? Date.now;
  }

  get pair(): StoredPair | undefined { return this.current; }

  /** Rotates until the signal aborts; with no current pair, requests one at once. */
  async run(signal: AbortSignal): Promise<void> {
    try {
      for (;;) {
        if (this.current) {
          const deadline = rotationDeadline(this.current, this.o.random);
          this.o.log.info({ prefix: this.o.prefix, notAfter: new Date(this.current.notAfter).toISOString(), rotateAt: new Date(deadline).toISOString() }, 'certificate rotation scheduled');
          for (let wait = deadline - this.now(); wait > 0; wait = deadline - this.now()) await sleep(Math.min(wait, MAX_TIMER_MS), signal);
        }
        await this.rotateOnce(signal);
      }
    } catch (e) {
      if (!signal.aborted) throw e;
    }
  }

  private async rotateOnce(signal: AbortSignal): Promise<void> {
    for (let delay = 2000; ; delay = Math.min(delay * 2, 5 * 60_000)) {
      try {
        const issued = await requestCertificate(this.o.client, this.o.request(), signal);
        const pair = await storePair(this.o.certDir, this.o.prefix, issued.certPem, issued.keyPem);
        this.current = pair;
        this.o.log.info({ prefix: this.o.prefix, csr: issued.csrName, notAfter: new Date(pair.notAfter).toISOString() }, 'certificate rotated');
        await this.o.onRotated(pair);
        return;
      } catch (e) {
        if (signal.aborted) throw e;
        this.o.log.warn({ prefix: this.o.prefix, err: (e as Error).message, retryInMs: delay }, 'certificate rotation failed; retrying');
      }
      await sleep(delay, signal);
    }
  }
}
