// Handler-level tests of the review resources (SSAR, SAR, LSAR, SSRR, SelfSubjectReview, TokenReview)
// against the real authorizer chain (AlwaysAllow / AlwaysDeny + system:masters) and token file.
import t, { type Test } from 'tap';
import { pino } from 'pino';
import { isApiError } from '../../src/api/meta/status.js';
import { decodeBody } from '../../src/api/codec/body.js';
import { encodeProtobuf } from '../../src/api/codec/protobuf.js';
import type { Authorizer } from '../../src/auth/authorizer.js';
import type { UserInfo } from '../../src/auth/user.js';
import { buildAuthorizer } from '../../src/daemons/apiserver/auth-setup.js';
import { BearerTokenAuthenticator } from '../../src/auth/bearer-token.js';
import { TokenFileAuthenticator } from '../../src/auth/token-file.js';
import { UnionAuthenticator } from '../../src/auth/union-authenticator.js';
import { AnonymousAuthenticator } from '../../src/auth/anonymous.js';
import type { RequestContext } from '../../src/daemons/apiserver/context.js';
import { parseRequestInfo } from '../../src/daemons/apiserver/request-info.js';
import { createReviewHandler, type ReviewHandler } from '../../src/daemons/apiserver/reviews/review-handler.js';
import { reviewResources } from '../../src/daemons/apiserver/reviews/review-resources.js';

const admin: UserInfo = { name: 'admin', groups: ['system:masters', 'system:authenticated'] };
const bob: UserInfo = { name: 'bob', uid: 'u-1', groups: ['dev', 'system:authenticated'], extra: { scopes: ['a'] } };

const tokens = TokenFileAuthenticator.fromText('tok-alice,alice,uid-alice,"g1,g2"\n').authenticator;
const authenticator = new UnionAuthenticator([new BearerTokenAuthenticator([tokens])], new AnonymousAuthenticator());

function ctxFor(method: string, path: string, user: UserInfo): RequestContext {
  const url = new URL(`https://127.0.0.1${path}`);
  return {
    info: parseRequestInfo(method, url), user, query: url.searchParams, signal: new AbortController().signal,
    requestId: 'test', log: pino({ level: 'silent' }), isLongRunning: false,
  };
}

function handlerFor(modes: string[]): ReviewHandler {
  return createReviewHandler({ authorizer: buildAuthorizer(modes), authenticator, authorizationModes: modes });
}

const SSAR = '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews';
const SSRR = '/apis/authorization.k8s.io/v1/selfsubjectrulesreviews';
const SAR = '/apis/authorization.k8s.io/v1/subjectaccessreviews';
const LSAR = (ns: string): string => `/apis/authorization.k8s.io/v1/namespaces/${ns}/localsubjectaccessreviews`;
const SSR = '/apis/authentication.k8s.io/v1/selfsubjectreviews';
const TR = '/apis/authentication.k8s.io/v1/tokenreviews';

const canCreatePods = { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: { namespace: 'default', verb: 'create', resource: 'pods' } } };

async function rejects(t: Test, p: Promise<unknown>, code: number, re: RegExp, msg: string): Promise<void> {
  try { await p; t.fail(`${msg}: expected ${code}`); } catch (e) {
    t.ok(isApiError(e), `${msg}: ApiError`);
    if (isApiError(e)) { t.equal(e.code, code, `${msg}: code`); t.match(e.message, re, `${msg}: message`); }
  }
}

t.test('definitions: create-only, scoped as Kubernetes does', async (t) => {
  const byPlural = new Map(reviewResources.map((d) => [d.plural, d]));
  t.equal(byPlural.size, 6);
  for (const d of reviewResources) t.same(d.verbs, ['create'], `${d.plural} verbs`);
  t.equal(byPlural.get('localsubjectaccessreviews')?.namespaced, true);
  t.equal(byPlural.get('selfsubjectaccessreviews')?.namespaced, false);
  t.equal(byPlural.get('tokenreviews')?.group, 'authentication.k8s.io');
  const h = handlerFor(['AlwaysAllow']);
  t.ok(h.handles('authorization.k8s.io', 'v1', 'selfsubjectaccessreviews'));
  t.ok(h.handles('authentication.k8s.io', 'v1', 'selfsubjectreviews'));
  t.notOk(h.handles('', 'v1', 'pods'));
  t.notOk(h.handles('authorization.k8s.io', 'v1beta1', 'selfsubjectaccessreviews'));
});

t.test('SelfSubjectAccessReview', async (t) => {
  const allow = handlerFor(['AlwaysAllow']);
  const deny = handlerFor(['AlwaysDeny']);
  let r = await allow.serve(ctxFor('POST', SSAR, bob), canCreatePods);
  t.equal(r.status, 201);
  t.equal(r.object.kind, 'SelfSubjectAccessReview');
  t.equal(r.object.apiVersion, 'authorization.k8s.io/v1');
  t.same(r.object.spec, canCreatePods.spec, 'spec echoed');
  t.same(r.object.status, { allowed: true });

  r = await deny.serve(ctxFor('POST', SSAR, bob), canCreatePods);
  t.match(r.object.status, { allowed: false, reason: 'Everything is forbidden.' });
  t.notOk((r.object.status as { denied?: boolean }).denied, 'AlwaysDeny has no opinion, it does not deny');

  r = await deny.serve(ctxFor('POST', SSAR, admin), canCreatePods);
  t.same(r.object.status, { allowed: true }, 'system:masters is allowed under AlwaysDeny');

  r = await deny.serve(ctxFor('POST', SSAR, bob), { spec: { nonResourceAttributes: { path: '/healthz', verb: 'get' } } });
  t.equal((r.object.status as { allowed: boolean }).allowed, false, 'non-resource question');
  r = await allow.serve(ctxFor('POST', SSAR, bob), { spec: { nonResourceAttributes: { path: '/healthz', verb: 'get' } } });
  t.equal((r.object.status as { allowed: boolean }).allowed, true);

  await rejects(t, allow.serve(ctxFor('POST', SSAR, bob), { spec: {} }), 422, /exactly one of nonResourceAttributes or resourceAttributes/, 'no attributes');
  await rejects(t, allow.serve(ctxFor('POST', SSAR, bob), { spec: { resourceAttributes: {}, nonResourceAttributes: {} } }), 422, /cannot be specified in combination/, 'both');
  await rejects(t, allow.serve(ctxFor('POST', SSAR, bob), { kind: 'Pod', spec: {} }), 400, /does not match the expected kind/, 'wrong kind');
  await rejects(t, allow.serve(ctxFor('POST', SSAR, bob), { metadata: { name: 'q' }, spec: canCreatePods.spec }), 422, /metadata: Invalid value: .*must be empty/, 'metadata set');
  r = await allow.serve(ctxFor('POST', SSAR, bob), { metadata: { creationTimestamp: null, managedFields: [] }, spec: canCreatePods.spec });
  t.equal(r.status, 201, 'empty metadata as clients send it');
  await rejects(t, allow.serve(ctxFor('GET', SSAR, bob), undefined), 405, /does not allow this method/, 'list');
});

t.test('the question reaches the authorizer with every attribute', async (t) => {
  const seen: unknown[] = [];
  const recording: Authorizer = { name: 'rec', async authorize(a) { seen.push(a); return { decision: 'deny', reason: 'nope' }; } };
  const h = createReviewHandler({ authorizer: recording, authenticator });
  const spec = { resourceAttributes: { namespace: 'ns', verb: 'get', group: 'apps', version: 'v1', resource: 'deployments', subresource: 'scale', name: 'web' } };
  const r = await h.serve(ctxFor('POST', SSAR, bob), { spec });
  t.same(r.object.status, { allowed: false, denied: true, reason: 'nope' });
  t.same(seen[0], {
    user: bob, isResourceRequest: true, path: '', verb: 'get', namespace: 'ns', apiGroup: 'apps', apiVersion: 'v1',
    resource: 'deployments', subresource: 'scale', name: 'web',
  });
  const failing: Authorizer = { name: 'boom', async authorize() { throw new Error('backend down'); } };
  const r2 = await createReviewHandler({ authorizer: failing, authenticator }).serve(ctxFor('POST', SSAR, bob), { spec });
  t.same(r2.object.status, { allowed: false, evaluationError: 'backend down' });
});

t.test('SubjectAccessReview asks for spec.user, not the requester', async (t) => {
  const seen: UserInfo[] = [];
  const deny = buildAuthorizer(['AlwaysDeny']);
  const spy: Authorizer = { name: 'spy', async authorize(a) { seen.push(a.user); return deny.authorize(a); } };
  const h = createReviewHandler({ authorizer: spy, authenticator });
  const body = { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: {
    user: 'root', groups: ['system:masters'], uid: 'u-9', extra: { k: ['v'] }, resourceAttributes: { verb: 'delete', resource: 'nodes' },
  } };
  let r = await h.serve(ctxFor('POST', SAR, bob), body);
  t.equal(r.status, 201);
  t.same(r.object.status, { allowed: true });
  t.same(seen[0], { name: 'root', uid: 'u-9', groups: ['system:masters'], extra: { k: ['v'] } });
  r = await h.serve(ctxFor('POST', SAR, admin), { spec: { user: 'bob', resourceAttributes: { verb: 'get', resource: 'pods' } } });
  t.equal((r.object.status as { allowed: boolean }).allowed, false, 'a plain user under AlwaysDeny');
  // Protobuf ExtraValue shape as the protobuf decoder may present it.
  r = await h.serve(ctxFor('POST', SAR, admin), { spec: { user: 'x', extra: { k: { items: ['v'] } }, resourceAttributes: { verb: 'get', resource: 'pods' } } });
  t.same(seen[2]?.extra, { k: ['v'] });
  await rejects(t, h.serve(ctxFor('POST', SAR, admin), { spec: { resourceAttributes: { verb: 'get' } } }), 422, /at least one of user or group must be specified/, 'no subject');
});

t.test('LocalSubjectAccessReview is bound to the URL namespace', async (t) => {
  const h = handlerFor(['AlwaysAllow']);
  const body = (ns: string, metaNs?: string): unknown => ({
    apiVersion: 'authorization.k8s.io/v1', kind: 'LocalSubjectAccessReview', metadata: metaNs ? { namespace: metaNs } : {},
    spec: { user: 'bob', resourceAttributes: { namespace: ns, verb: 'get', resource: 'pods' } },
  });
  const r = await h.serve(ctxFor('POST', LSAR('team'), admin), body('team'));
  t.equal(r.status, 201);
  t.equal(r.object.metadata?.namespace, 'team');
  t.same(r.object.status, { allowed: true });
  await rejects(t, h.serve(ctxFor('POST', LSAR('team'), admin), body('team', 'other')), 400, /does not match the namespace/, 'metadata.namespace mismatch');
  await rejects(t, h.serve(ctxFor('POST', LSAR('team'), admin), body('other')), 422, /spec.resourceAttributes.namespace.*must match metadata.namespace/, 'spec namespace mismatch');
  await rejects(t, h.serve(ctxFor('POST', LSAR('team'), admin), { spec: { user: 'bob', nonResourceAttributes: { path: '/x', verb: 'get' } } }), 422, /disallowed/, 'non-resource');
});

t.test('SelfSubjectRulesReview', async (t) => {
  const body = { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectRulesReview', spec: { namespace: 'default' } };
  const all = { resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }], nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }], incomplete: false };
  let r = await handlerFor(['AlwaysAllow']).serve(ctxFor('POST', SSRR, bob), body);
  t.equal(r.status, 201);
  t.same(r.object.status, all, 'AlwaysAllow');
  t.same(r.object.spec, { namespace: 'default' });
  r = await handlerFor(['AlwaysDeny']).serve(ctxFor('POST', SSRR, admin), body);
  t.same(r.object.status, all, 'system:masters');
  r = await handlerFor(['AlwaysDeny']).serve(ctxFor('POST', SSRR, bob), body);
  t.same(r.object.status, { resourceRules: [], nonResourceRules: [], incomplete: false }, 'AlwaysDeny');
  const opaque: Authorizer = { name: 'opaque', async authorize() { return { decision: 'noOpinion', reason: '' }; } };
  r = await createReviewHandler({ authorizer: opaque, authenticator }).serve(ctxFor('POST', SSRR, bob), body);
  t.match(r.object.status, { resourceRules: [], nonResourceRules: [], incomplete: true, evaluationError: /cannot list rules/ }, 'cannot enumerate');
  r = await createReviewHandler({ authorizer: opaque, authenticator, authorizationModes: ['Webhook'] }).serve(ctxFor('POST', SSRR, bob), body);
  t.match(r.object.status, { incomplete: true, evaluationError: /"Webhook" cannot list rules/ });
  const resolver = Object.assign(opaque, { async rulesFor() { return { resourceRules: [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }], nonResourceRules: [], incomplete: false }; } });
  r = await createReviewHandler({ authorizer: resolver, authenticator }).serve(ctxFor('POST', SSRR, bob), body);
  t.same((r.object.status as { resourceRules: unknown }).resourceRules, [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }], 'a RuleResolver is asked');
  await rejects(t, handlerFor(['AlwaysAllow']).serve(ctxFor('POST', SSRR, bob), { spec: {} }), 400, /no namespace on request/, 'no namespace');
});

t.test('SelfSubjectReview', async (t) => {
  const r = await handlerFor(['AlwaysAllow']).serve(ctxFor('POST', SSR, bob), { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview', metadata: { creationTimestamp: null } });
  t.equal(r.status, 201);
  t.equal(r.object.kind, 'SelfSubjectReview');
  t.equal(r.object.apiVersion, 'authentication.k8s.io/v1');
  t.same(r.object.status, { userInfo: { username: 'bob', uid: 'u-1', groups: ['dev', 'system:authenticated'], extra: { scopes: ['a'] } } });
  const r2 = await handlerFor(['AlwaysAllow']).serve(ctxFor('POST', SSR, admin), {});
  t.same(r2.object.status, { userInfo: { username: 'admin', groups: ['system:masters', 'system:authenticated'] } }, 'empty uid/extra omitted');
});

t.test('TokenReview', async (t) => {
  const h = handlerFor(['AlwaysAllow']);
  let r = await h.serve(ctxFor('POST', TR, admin), { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token: 'tok-alice' } });
  t.equal(r.status, 201);
  t.same(r.object.status, { authenticated: true, user: { username: 'alice', uid: 'uid-alice', groups: ['g1', 'g2', 'system:authenticated'] } });
  r = await h.serve(ctxFor('POST', TR, admin), { spec: { token: 'wrong' } });
  t.same(r.object.status, { authenticated: false, user: {}, error: 'invalid bearer token' });
  r = await h.serve(ctxFor('POST', TR, admin), { spec: { token: 'tok-alice', audiences: ['api'] } });
  t.match(r.object.status, { authenticated: true, audiences: ['api'] }, 'requested audiences echoed for audience-agnostic tokens');
  const withAuds = createReviewHandler({ authorizer: buildAuthorizer(['AlwaysAllow']), authenticator, apiAudiences: ['https://kubernetes.default.svc'] });
  r = await withAuds.serve(ctxFor('POST', TR, admin), { spec: { token: 'tok-alice' } });
  t.match(r.object.status, { authenticated: true, audiences: ['https://kubernetes.default.svc'] });
  r = await withAuds.serve(ctxFor('POST', TR, admin), { spec: { token: 'tok-alice', audiences: ['other'] } });
  t.match(r.object.status, { authenticated: false, error: /invalid for the target audiences/ });
  // Without token authenticators, the anonymous fallback must not count as authenticated.
  const anonOnly = createReviewHandler({ authorizer: buildAuthorizer(['AlwaysAllow']), authenticator: new UnionAuthenticator([], new AnonymousAuthenticator()) });
  r = await anonOnly.serve(ctxFor('POST', TR, admin), { spec: { token: 'tok-alice' } });
  t.equal((r.object.status as { authenticated: boolean }).authenticated, false);
  await rejects(t, h.serve(ctxFor('POST', TR, admin), { spec: {} }), 400, /token is required/, 'no token');
});

t.test('protobuf bodies (kubectl 1.32+) decode into the same requests, replies encode', async (t) => {
  const h = handlerFor(['AlwaysAllow']);
  const pb = encodeProtobuf(canCreatePods);
  const decoded = decodeBody('application/vnd.kubernetes.protobuf', pb);
  const r = await h.serve(ctxFor('POST', SSAR, bob), decoded);
  t.same(r.object.status, { allowed: true });
  t.match(r.object.spec, { resourceAttributes: { namespace: 'default', verb: 'create', resource: 'pods' } });
  for (const obj of [r.object, (await h.serve(ctxFor('POST', SSRR, bob), { spec: { namespace: 'default' } })).object,
    (await h.serve(ctxFor('POST', SSR, bob), {})).object, (await h.serve(ctxFor('POST', TR, bob), { spec: { token: 'tok-alice' } })).object]) {
    const round = decodeBody('application/vnd.kubernetes.protobuf', encodeProtobuf(obj)) as { kind?: string; status?: unknown };
    t.equal(round.kind, obj.kind, `${String(obj.kind)} encodes as protobuf`);
    t.same(round.status, obj.status, `${String(obj.kind)} status round-trips`);
  }
  const sar = decodeBody('application/vnd.kubernetes.protobuf', encodeProtobuf({ apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview',
    spec: { user: 'u', extra: { k: ['v1', 'v2'] }, resourceAttributes: { verb: 'get', resource: 'pods' } } }));
  const seen: UserInfo[] = [];
  const spy: Authorizer = { name: 'spy', async authorize(a) { seen.push(a.user); return { decision: 'allow', reason: '' }; } };
  await createReviewHandler({ authorizer: spy, authenticator }).serve(ctxFor('POST', SAR, bob), sar);
  t.same(seen[0]?.extra, { k: ['v1', 'v2'] }, 'extra from protobuf');
});
