/**
 * How the node agent pulls: the runtime's PullImage behind
 *   --registry-qps / --registry-burst (a pull over the budget fails at once with
 *     "pull QPS exceeded", as Kubernetes' throttled image service does; the pod worker retries
 *     with its image backoff),
 *   --serialize-image-pulls (one pull at a time, in call order),
 *   --image-pull-progress-deadline (a pull whose progress signature has not changed for the
 *     deadline is cancelled; the reference's error 7),
 * and registry credentials from pull secrets (tried in turn, as Kubernetes does; an anonymous
 * pull when there are none).
 * Contract: `pull` rejects with an Error whose message is what the pod's waiting state shows.
 */
import type { Logger } from 'pino';
import { TokenBucket } from '../../../client/rate-limiter.js';
import { formatDuration } from '../../../util/duration.js';
import type { ImageAuth, PodSandboxConfig, RuntimeBackend } from '../runtime/runtime.js';

/** A changing value while a pull makes progress (e.g. bytes written to the runtime's content store). */
export type ProgressProbe = () => Promise<string>;

export interface PullServiceOptions {
  readonly runtime: RuntimeBackend;
  readonly qps: number;
  readonly burst: number;
  readonly serialize: boolean;
  /** 0 disables the deadline. */
  readonly progressDeadlineMs: number;
  readonly progress?: ProgressProbe;
  /** How often progress is sampled; default min(1 s, deadline / 4). */
  readonly sampleMs?: number;
  readonly log: Logger;
}

export class PullService {
  private readonly bucket: TokenBucket;
  private tail: Promise<unknown> = Promise.resolve();
  /** Pulls cancelled for lack of progress (tests, metrics). */
  cancelled = 0;

  constructor(private readonly o: PullServiceOptions) {
    this.bucket = new TokenBucket({ qps: o.qps, burst: Math.max(1, o.burst) });
  }

  async pull(image: string, auths: readonly ImageAuth[], sandbox?: PodSandboxConfig): Promise<string> {
    if (!this.bucket.tryTake()) throw new Error('pull QPS exceeded');
    if (!this.o.serialize) return this.pullWithAuths(image, auths, sandbox);
    const run = this.tail.catch(() => undefined).then(() => this.pullWithAuths(image, auths, sandbox));
    this.tail = run;
    return run;
  }

  private async pullWithAuths(image: string, auths: readonly ImageAuth[], sandbox?: PodSandboxConfig): Promise<string> {
    if (auths.length === 0) return this.pullOnce(image, undefined, sandbox);
    const errors: string[] = [];
    for (const auth of auths) {
      try {
        return await this.pullOnce(image, auth, sandbox);
      } catch (e) {
        errors.push((e as Error).message);
      }
    }
    throw new Error(errors.length === 1 ? errors[0]! : `[${errors.join(', ')}]`);
  }

  private async pullOnce(image: string, auth: ImageAuth | undefined, sandbox?: PodSandboxConfig): Promise<string> {
    const deadline = this.o.progressDeadlineMs;
    const probe = this.o.progress;
    if (!(deadline > 0) || !probe) return this.o.runtime.pullImage(image, auth, sandbox);
    const ac = new AbortController();
    let last = await probe().catch(() => '');
    let lastChange = Date.now();
    let stalled = false;
    const sampleMs = this.o.sampleMs ?? Math.max(10, Math.min(1000, deadline / 4));
    const timer = setInterval(() => {
      void probe().catch(() => last).then((now) => {
        if (now !== last) { last = now; lastChange = Date.now(); return; }
        if (Date.now() - lastChange >= deadline && !ac.signal.aborted) { stalled = true; ac.abort(); }
      });
    }, sampleMs);
    try {
      return await this.o.runtime.pullImage(image, auth, sandbox, { signal: ac.signal });
    } catch (e) {
      if (!stalled) throw e;
      this.cancelled++;
      this.o.log.warn({ image, deadlineMs: deadline }, 'image pull cancelled: no progress');
      throw new Error(`Cancel pulling image "${image}" because of no progress for ${formatDuration(deadline)}, latest progress: "${last}"`);
    } finally {
      clearInterval(timer);
    }
  }
}
