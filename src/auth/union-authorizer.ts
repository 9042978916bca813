/** The authorization chain: the first decisive answer (allow or deny) wins; reasons of the rest are kept. */
import type { AuthorizationAttributes, AuthorizationResult, Authorizer } from './authorizer.js';

export class UnionAuthorizer implements Authorizer {
  readonly name = 'union';
  constructor(private readonly chain: Authorizer[]) {}

  async authorize(attrs: AuthorizationAttributes): Promise<AuthorizationResult> {
    const reasons: string[] = [];
    for (const a of this.chain) {
      const r = await a.authorize(attrs);
      if (r.decision !== 'noOpinion') return r;
      if (r.reason) reasons.push(r.reason);
    }
    return { decision: 'noOpinion', reason: reasons.join('\n') };
  }
}
