import t from 'tap';
import type { AuthorizationAttributes, AuthorizationResult, Authorizer } from '../../src/auth/authorizer.js';
import { AlwaysAllowAuthorizer } from '../../src/auth/always-allow.js';
import { AlwaysDenyAuthorizer } from '../../src/auth/always-deny.js';
import { PrivilegedGroupsAuthorizer } from '../../src/auth/privileged-groups.js';
import { UnionAuthorizer } from '../../src/auth/union-authorizer.js';

const attrs = (groups: string[]): AuthorizationAttributes => ({
  user: { name: 'u', uid: '', groups }, verb: 'get', isResourceRequest: true, path: '/api/v1/namespaces/ns/pods/p',
  namespace: 'ns', apiGroup: '', apiVersion: 'v1', resource: 'pods', subresource: '', name: 'p',
});

/** An authorizer that answers later (as a webhook or an RBAC lookup may). */
function later(r: AuthorizationResult): Authorizer {
  return { name: 'later', authorize: async () => { await new Promise((res) => setImmediate(res)); return r; } };
}

t.test('the chain: the first decisive answer wins, reasons of the undecided are kept', async (t) => {
  const sync = new UnionAuthorizer([new PrivilegedGroupsAuthorizer(), new AlwaysDenyAuthorizer(), new AlwaysAllowAuthorizer()]);
  const admin = sync.authorize(attrs(['system:masters']));
  t.notOk(admin instanceof Promise, 'synchronous links give a plain answer');
  t.equal((await admin).decision, 'allow');
  t.equal((await sync.authorize(attrs([]))).decision, 'allow', 'AlwaysDeny has no opinion; AlwaysAllow decides');

  const mixed = new UnionAuthorizer([new AlwaysDenyAuthorizer(), later({ decision: 'noOpinion', reason: 'not in a role' }), later({ decision: 'deny', reason: 'webhook said no' })]);
  const r = mixed.authorize(attrs([]));
  t.ok(r instanceof Promise, 'a link answering later makes the answer a promise');
  t.same(await r, { decision: 'deny', reason: 'webhook said no' });

  const none = new UnionAuthorizer([new AlwaysDenyAuthorizer(), later({ decision: 'noOpinion', reason: 'not in a role' })]);
  t.same(await none.authorize(attrs([])), { decision: 'noOpinion', reason: 'Everything is forbidden.\nnot in a role' }, 'every reason, in chain order');
});
