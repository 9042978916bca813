import t from 'tap';
import { parseRequestTarget } from '../../src/daemons/apiserver/request-target.js';
import { RequestAbort } from '../../src/daemons/apiserver/request-abort.js';

t.test('request targets read exactly as the URL parser reads them', async (t) => {
  const targets = [
    '/', '', '/api', '/api/v1/namespaces/default/pods/p-1', '/api/v1/pods?watch=1&resourceVersion=10',
    '/apis/apps/v1/namespaces/a/deployments/web/scale', '/api/v1/namespaces/a/pods?labelSelector=app%3Dweb%2Ctier+in+(a,b)',
    '/api/v1/namespaces/a/pods?fieldSelector=metadata.name=x&limit=500&continue=eyJ2IjoxfQ==',
    '/api/v1/namespaces/a/configmaps/system:node.x', '/healthz?verbose', '/readyz/ping', '/openapi/v3/apis/apps/v1?hash=ABC',
    // Forms the URL parser rewrites: the general path must give its answer.
    '/api/v1/../v1/pods', '/api/./v1/pods', '/api/v1/pods/..', '/api/v1/%2e%2e/x', '/api/v1/namespaces/a%2Fb/pods',
    '//evil/api/v1/pods', '/api\\v1\\pods', '/api/v1/pods#frag', '/api/v1/pods?q=a b', '/api/v1/pods?q="x"',
    '/api/v1/pods/näme', '/api/v1/pods?x=ü', '/api/v1/pods?a=1&a=2&b', '/api/v1/pods?', '/a//b', '/api/v1/pods/.hidden',
    '/api/v1/pods/x.', '/api/v1/pods/...', '/api/v1/pods?x=a?b', '/x/..?q=1', '/.', '/..', '/a/.?', '/%7e', '/api/v1/pods?q=%zz',
  ];
  for (const raw of targets) {
    const got = parseRequestTarget(raw);
    const want = new URL(raw || '/', 'https://apiserver.invalid');
    t.equal(got.pathname, want.pathname, `path of ${JSON.stringify(raw)}`);
    t.same([...got.searchParams], [...want.searchParams], `query of ${JSON.stringify(raw)}`);
  }
  t.same(parseRequestTarget(undefined).pathname, '/');
});

t.test('a request abort makes its signal on demand and remembers an early abort', async (t) => {
  const late = new RequestAbort();
  const s = late.signal;
  t.equal(s.aborted, false);
  t.equal(late.signal, s, 'one signal per request');
  late.abort(new Error('gone'));
  t.equal(s.aborted, true);
  t.equal((s.reason as Error).message, 'gone');
  late.abort(new Error('second'));
  t.equal((s.reason as Error).message, 'gone', 'the first abort wins');

  const early = new RequestAbort();
  early.abort(new Error('timed out'));
  t.equal(early.signal.aborted, true, 'an abort before the first read is remembered');
  t.equal((early.signal.reason as Error).message, 'timed out');
});
