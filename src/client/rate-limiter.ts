/**
 * Token bucket: `qps` tokens per second, at most `burst` saved up. Every API request takes one
 * token before it is sent (watch streams take one to open, never per byte). qps <= 0 means
 * unlimited.
 *
 * Contract: tokens are handed out in call order (a waiter reserves its token up front, so a
 * later caller never overtakes an earlier one); an aborted wait gives its token back.
 */
import { realClock, type Clock } from './clock.js';

export interface TokenBucketOptions {
  qps: number;
  burst: number;
  clock?: Clock;
}

export class TokenBucket {
  readonly qps: number;
  readonly burst: number;
  private readonly clock: Clock;
  private tokens: number;
  private last: number;
  /** Tokens taken so far (for tests and metrics). */
  taken = 0;

  constructor(opts: TokenBucketOptions) {
    this.qps = opts.qps;
    this.burst = Math.max(1, Math.floor(opts.burst));
    this.clock = opts.clock ?? realClock;
    this.tokens = this.burst;
    this.last = this.clock.now();
  }

  get unlimited(): boolean { return !(this.qps > 0); }

  private refill(): void {
    const now = this.clock.now();
    if (now > this.last) {
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) * this.qps) / 1000);
      this.last = now;
    }
  }

  /** Tokens available now (may be negative while waiters hold reservations). */
  available(): number {
    if (this.unlimited) return Infinity;
    this.refill();
    return this.tokens;
  }

  /** Takes a token now if one is free. */
  tryTake(): boolean {
    if (this.unlimited) { this.taken++; return true; }
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    this.taken++;
    return true;
  }

  /** Reserves a token and returns how long (ms) the caller must wait before using it. */
  reserve(): number {
    this.taken++;
    if (this.unlimited) return 0;
    this.refill();
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens * 1000) / this.qps);
  }

  /** Waits for a token. */
  async take(signal?: AbortSignal): Promise<void> {
    const wait = this.reserve();
    if (wait <= 0) return;
    try {
      await this.clock.sleep(wait, signal);
    } catch (e) {
      if (!this.unlimited) this.tokens += 1;
      this.taken--;
      throw e;
    }
  }
}
