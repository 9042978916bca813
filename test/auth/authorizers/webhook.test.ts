// The Webhook authorizer against a real HTTPS fixture service: the SubjectAccessReview it
// sends, the credentials it presents, caching by TTL (a second question within the TTL is not
// sent), a failing service is "no opinion" (after bounded retries) and a denial stops the chain.
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { AlwaysAllowAuthorizer } from '../../../src/auth/always-allow.js';
import type { AuthorizationAttributes, AuthorizationResult } from '../../../src/auth/authorizer.js';
import { WebhookAuthorizer, type WebhookAuthorizerOptions } from '../../../src/auth/authorizers/webhook.js';
import { UnionAuthorizer } from '../../../src/auth/union-authorizer.js';
import type { ClientConnection } from '../../../src/client/coreconfig.js';
import { createCA, issueCert } from '../../../src/util/pki.js';
import { eventually } from '../../helpers/rest-client.js';
import { sarWebhookServer, type SarWebhookServer } from '../../helpers/webhook-server.js';

const silent = pino({ level: 'silent' });

function pods(user = 'bob', namespace = 'ns', verb = 'get'): AuthorizationAttributes {
  return {
    user: { name: user, uid: 'u-1', groups: ['dev', 'system:authenticated'], extra: { scopes: ['a', 'b'] } }, verb, isResourceRequest: true, path: `/api/v1/namespaces/${namespace}/pods/p`,
    namespace, apiGroup: '', apiVersion: 'v1', resource: 'pods', subresource: 'log', name: 'p',
  };
}

async function setup(t: Test, opts: Partial<WebhookAuthorizerOptions> = {}, conn: Partial<ClientConnection> = {}): Promise<{ hook: SarWebhookServer; w: WebhookAuthorizer }> {
  const hook = await sarWebhookServer();
  t.teardown(() => hook.close());
  const w = new WebhookAuthorizer({ server: hook.url, ca: Buffer.from(hook.caPem), ...conn }, {
    authorizedTtlMs: 300_000, unauthorizedTtlMs: 30_000, log: silent, initialBackoffMs: 5, ...opts,
  });
  t.teardown(() => w.close());
  return { hook, w };
}

t.test('sends a v1 SubjectAccessReview with the user and resource attributes; non-resource paths too', async (t) => {
  const { hook, w } = await setup(t, {}, { token: 'secret-token' });
  t.same(await w.authorize(pods()), { decision: 'allow', reason: '' });
  const r = hook.reviews[0]!;
  t.equal(r.review.apiVersion, 'authorization.k8s.io/v1');
  t.equal(r.review.kind, 'SubjectAccessReview');
  t.same(r.review.spec, {
    user: 'bob', uid: 'u-1', groups: ['dev', 'system:authenticated'], extra: { scopes: ['a', 'b'] },
    resourceAttributes: { namespace: 'ns', verb: 'get', version: 'v1', resource: 'pods', subresource: 'log', name: 'p' },
  });
  t.equal(r.authorization, 'Bearer secret-token', 'the coreconfig token is presented');
  await w.authorize({ ...pods(), isResourceRequest: false, path: '/healthz', verb: 'get' });
  t.same(hook.reviews[1]!.review.spec.nonResourceAttributes, { path: '/healthz', verb: 'get' });
  t.notOk(hook.reviews[1]!.review.spec.resourceAttributes);
  await w.authorize({ ...pods(), user: { name: 'solo', groups: [] } });
  t.same(Object.keys(hook.reviews[2]!.review.spec).sort(), ['resourceAttributes', 'user'], 'empty fields are left out, as Go\'s omitempty');
});

t.test('a client certificate from the coreconfig is presented', async (t) => {
  const ca = await createCA({ commonName: 'client-ca' });
  const client = await issueCert({ ca, commonName: 'kube-apiserver', usages: 'client' });
  const hook = await sarWebhookServer({ clientCaPem: ca.certPem });
  t.teardown(() => hook.close());
  const w = new WebhookAuthorizer({ server: hook.url, ca: Buffer.from(hook.caPem), cert: Buffer.from(client.certPem), key: Buffer.from(client.keyPem) },
    { authorizedTtlMs: 1000, unauthorizedTtlMs: 1000, log: silent });
  t.teardown(() => w.close());
  await w.authorize(pods());
  t.equal(hook.reviews[0]!.clientCN, 'kube-apiserver');
});

t.test('cache: a second identical question within the TTL is not sent; another question is; answers expire', async (t) => {
  const { hook, w } = await setup(t, { authorizedTtlMs: 300_000, unauthorizedTtlMs: 300_000 });
  hook.answer = (rv) => (rv.spec.resourceAttributes?.namespace === 'no' ? { allowed: false, reason: 'not here' } : { allowed: true });
  t.equal((await w.authorize(pods())).decision, 'allow');
  const again = w.authorize(pods());
  t.notOk(again instanceof Promise, 'a cached answer is given at once');
  t.equal((await again).decision, 'allow');
  t.equal(hook.reviews.length, 1, 'the second question was not sent');
  t.same(await w.authorize(pods('bob', 'no')), { decision: 'noOpinion', reason: 'not here' });
  t.same(await w.authorize(pods('bob', 'no')), { decision: 'noOpinion', reason: 'not here' }, 'unauthorized answers are cached too');
  t.equal(hook.reviews.length, 2);
  await w.authorize(pods('carol'));
  t.equal(hook.reviews.length, 3, 'another user is another question');

  const short = await setup(t, { authorizedTtlMs: 30, unauthorizedTtlMs: 0 });
  await short.w.authorize(pods());
  await eventually(async () => { await short.w.authorize(pods()); return short.hook.reviews.length >= 2; }, 5000);
  t.pass('an allowed answer is asked again once its TTL passed');
  short.hook.answer = () => ({ allowed: false });
  await short.w.authorize(pods('dave'));
  await short.w.authorize(pods('dave'));
  t.equal(short.hook.reviews.filter((r) => r.review.spec.user === 'dave').length, 2, 'unauthorized TTL 0: never cached');
});

t.test('a denial is a deny that stops the chain; allowed+denied is a deny', async (t) => {
  const { hook, w } = await setup(t);
  hook.answer = () => ({ allowed: false, denied: true, reason: 'blocked by policy' });
  const chain = new UnionAuthorizer([w, new AlwaysAllowAuthorizer()]);
  t.same(await chain.authorize(pods()), { decision: 'deny', reason: 'blocked by policy' }, 'AlwaysAllow after it is never asked');
  hook.answer = () => ({ allowed: true, denied: true, reason: 'both' });
  t.same(await w.authorize(pods('other')), { decision: 'deny', reason: 'both' });
  hook.answer = () => ({ allowed: false, reason: 'dunno' });
  t.same(await chain.authorize(pods('third')), { decision: 'allow', reason: '' }, 'not allowed, not denied: the next mode decides');
});

t.test('a failing service is "no opinion", logged, after bounded retries of transient failures', async (t) => {
  const lines: string[] = [];
  const log = pino({ level: 'error' }, { write: (l: string) => { lines.push(l); } });
  const { hook, w } = await setup(t, { log }, { token: 'do-not-log-me' });
  hook.answer = () => ({ status: 500, body: 'boom' });
  const chain = new UnionAuthorizer([w, new AlwaysAllowAuthorizer()]);
  const r: AuthorizationResult = await w.authorize(pods());
  t.same(r, { decision: 'noOpinion', reason: '' });
  t.equal(hook.reviews.length, 5, '500 is retried, 5 attempts in all');
  t.match(lines.join(''), /Failed to make webhook authorizer request/);
  t.match(lines.join(''), /status 500/);
  t.notMatch(lines.join(''), /do-not-log-me/, 'the token is not logged');
  t.equal((await chain.authorize(pods())).decision, 'allow', 'the next mode decides; failures are not cached');
  t.equal(hook.reviews.length, 10);

  hook.reviews.length = 0;
  hook.answer = () => ({ status: 403, body: 'forbidden' });
  t.equal((await w.authorize(pods('x'))).decision, 'noOpinion');
  t.equal(hook.reviews.length, 1, 'a 403 is not retried');
  hook.answer = () => ({ status: 200, body: 'not json' });
  t.equal((await w.authorize(pods('y'))).decision, 'noOpinion', 'a body that is no review');

  const url = hook.url;
  await hook.close();
  const gone = new WebhookAuthorizer({ server: url, ca: Buffer.from(hook.caPem) }, { authorizedTtlMs: 1000, unauthorizedTtlMs: 1000, log: silent });
  t.teardown(() => gone.close());
  t.same(await gone.authorize(pods()), { decision: 'noOpinion', reason: '' }, 'an unreachable service');
  const hung = await setup(t, { attemptTimeoutMs: 100, initialBackoffMs: 1 });
  hung.hook.answer = () => 'hang';
  t.equal((await hung.w.authorize(pods())).decision, 'noOpinion', 'a service that never answers');
  t.equal(hung.hook.reviews.length, 5, 'timeouts are retried, 5 attempts in all');
});

t.test('a service with an unknown certificate authority is "no opinion"', async (t) => {
  const { hook } = await setup(t);
  const other = await createCA({ commonName: 'other' });
  const w = new WebhookAuthorizer({ server: hook.url, ca: Buffer.from(other.certPem) }, { authorizedTtlMs: 1000, unauthorizedTtlMs: 1000, log: silent });
  t.teardown(() => w.close());
  t.equal((await w.authorize(pods())).decision, 'noOpinion');
  t.equal(hook.reviews.length, 0, 'nothing reached the untrusted service');
});
