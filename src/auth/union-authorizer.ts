/** The authorization chain: the first decisive answer (allow or deny) wins; reasons of the rest are kept. */
import type { AuthorizationAttributes, AuthorizationResult, Authorizer } from './authorizer.js';

export class UnionAuthorizer implements Authorizer {
  readonly name = 'union';
  /** The links in order (SelfSubjectRulesReview asks each for its rules). */
  constructor(readonly chain: readonly Authorizer[]) {}

  /** Synchronous while every link answers synchronously (the common modes do). */
  authorize(attrs: AuthorizationAttributes): AuthorizationResult | Promise<AuthorizationResult> {
    const reasons: string[] = [];
    for (let i = 0; i < this.chain.length; i++) {
      const r = this.chain[i]!.authorize(attrs);
      if (r instanceof Promise) return this.rest(attrs, i, r, reasons);
      if (r.decision !== 'noOpinion') return r;
      if (r.reason) reasons.push(r.reason);
    }
    return { decision: 'noOpinion', reason: reasons.join('\n') };
  }

  /** The chain from link `i` on, once a link answered with a promise. */
  private async rest(attrs: AuthorizationAttributes, i: number, pending: Promise<AuthorizationResult>, reasons: string[]): Promise<AuthorizationResult> {
    for (let k = i; k < this.chain.length; k++) {
      const r = k === i ? await pending : await this.chain[k]!.authorize(attrs);
      if (r.decision !== 'noOpinion') return r;
      if (r.reason) reasons.push(r.reason);
    }
    return { decision: 'noOpinion', reason: reasons.join('\n') };
  }
}
