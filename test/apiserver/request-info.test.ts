import t from 'tap';
import { isLongRunningRequest, isReadOnlyRequest, parseRequestInfo, queryBool } from '../../src/daemons/apiserver/request-info.js';

function info(method: string, pathAndQuery: string) {
  return parseRequestInfo(method, new URL(pathAndQuery, 'https://x'));
}

type Row = [method: string, url: string, verb: string, group: string, version: string, ns: string, resource: string, sub: string, name: string];

const rows: Row[] = [
  ['GET', '/api/v1/namespaces', 'list', '', 'v1', '', 'namespaces', '', ''],
  ['GET', '/api/v1/namespaces/other', 'get', '', 'v1', 'other', 'namespaces', '', 'other'],
  ['PUT', '/api/v1/namespaces/other/finalize', 'update', '', 'v1', 'other', 'namespaces', 'finalize', 'other'],
  ['PUT', '/api/v1/namespaces/other/status', 'update', '', 'v1', 'other', 'namespaces', 'status', 'other'],
  ['DELETE', '/api/v1/namespaces/other', 'delete', '', 'v1', 'other', 'namespaces', '', 'other'],
  ['GET', '/api/v1/namespaces/other/pods', 'list', '', 'v1', 'other', 'pods', '', ''],
  ['GET', '/api/v1/namespaces/other/pods/foo', 'get', '', 'v1', 'other', 'pods', '', 'foo'],
  ['HEAD', '/api/v1/namespaces/other/pods/foo', 'get', '', 'v1', 'other', 'pods', '', 'foo'],
  ['GET', '/api/v1/pods', 'list', '', 'v1', '', 'pods', '', ''],
  ['GET', '/api/v1/namespaces/other/pods/foo/log', 'get', '', 'v1', 'other', 'pods', 'log', 'foo'],
  ['POST', '/api/v1/namespaces/other/pods', 'create', '', 'v1', 'other', 'pods', '', ''],
  ['PUT', '/api/v1/namespaces/other/pods/foo', 'update', '', 'v1', 'other', 'pods', '', 'foo'],
  ['PATCH', '/api/v1/namespaces/other/pods/foo', 'patch', '', 'v1', 'other', 'pods', '', 'foo'],
  ['DELETE', '/api/v1/namespaces/other/pods/foo', 'delete', '', 'v1', 'other', 'pods', '', 'foo'],
  ['DELETE', '/api/v1/namespaces/other/pods', 'deletecollection', '', 'v1', 'other', 'pods', '', ''],
  ['GET', '/api/v1/namespaces/other/pods?watch=true', 'watch', '', 'v1', 'other', 'pods', '', ''],
  ['GET', '/api/v1/namespaces/other/pods?watch=True', 'watch', '', 'v1', 'other', 'pods', '', ''],
  ['GET', '/api/v1/namespaces/other/pods?watch=1', 'watch', '', 'v1', 'other', 'pods', '', ''],
  ['GET', '/api/v1/namespaces/other/pods?watch=t', 'watch', '', 'v1', 'other', 'pods', '', ''],
  ['GET', '/api/v1/namespaces/other/pods?watch=TRUE', 'watch', '', 'v1', 'other', 'pods', '', ''],
  ['GET', '/api/v1/namespaces/other/pods?watch=false', 'list', '', 'v1', 'other', 'pods', '', ''],
  ['GET', '/api/v1/namespaces/other/pods?watch=False', 'list', '', 'v1', 'other', 'pods', '', ''],
  ['GET', '/api/v1/namespaces/other/pods?watch=0', 'list', '', 'v1', 'other', 'pods', '', ''],
  ['GET', '/api/v1/namespaces/other/pods?watch=F', 'list', '', 'v1', 'other', 'pods', '', ''],
  ['GET', '/api/v1/namespaces/other/pods?watch=', 'watch', '', 'v1', 'other', 'pods', '', ''],
  ['GET', '/api/v1/watch/namespaces/other/pods', 'watch', '', 'v1', 'other', 'pods', '', ''],
  ['GET', '/api/v1/watch/namespaces/other/pods/foo', 'watch', '', 'v1', 'other', 'pods', '', 'foo'],
  ['GET', '/apis/apps/v1/watch/deployments', 'watch', 'apps', 'v1', '', 'deployments', '', ''],
  ['GET', '/apis/apps/v1/namespaces/other/deployments/web/scale', 'get', 'apps', 'v1', 'other', 'deployments', 'scale', 'web'],
  ['PATCH', '/apis/apps/v1/namespaces/other/deployments/web/status', 'patch', 'apps', 'v1', 'other', 'deployments', 'status', 'web'],
  ['GET', '/apis/apps/v1/deployments?watch=1', 'watch', 'apps', 'v1', '', 'deployments', '', ''],
  ['GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles/admin', 'get', 'rbac.authorization.k8s.io', 'v1', '', 'clusterroles', '', 'admin'],
  ['GET', '/api/v1/nodes/n1', 'get', '', 'v1', '', 'nodes', '', 'n1'],
  ['GET', '/api/v1/nodes/n1/proxy/metrics', 'connect', '', 'v1', '', 'nodes', 'proxy', 'n1'],
  ['POST', '/api/v1/namespaces/other/pods/foo/exec', 'connect', '', 'v1', 'other', 'pods', 'exec', 'foo'],
  ['GET', '/api/v1/namespaces/other/pods/foo/exec', 'connect', '', 'v1', 'other', 'pods', 'exec', 'foo'],
  ['POST', '/api/v1/namespaces/other/pods/foo/attach', 'connect', '', 'v1', 'other', 'pods', 'attach', 'foo'],
  ['GET', '/api/v1/namespaces/other/pods/foo/portforward', 'connect', '', 'v1', 'other', 'pods', 'portforward', 'foo'],
  ['GET', '/api/v1/namespaces/other/services/s/proxy/x/y', 'connect', '', 'v1', 'other', 'services', 'proxy', 's'],
  ['POST', '/api/v1/namespaces/other/serviceaccounts/default/token', 'create', '', 'v1', 'other', 'serviceaccounts', 'token', 'default'],
  ['POST', '/api/v1/namespaces/other/pods/foo/eviction', 'create', '', 'v1', 'other', 'pods', 'eviction', 'foo'],
  ['GET', '/api/v1/proxy/namespaces/other/pods/foo/bar', 'proxy', '', 'v1', 'other', 'pods', '', 'foo'],
  ['GET', '/api/v1/namespaces/other/pods?fieldSelector=metadata.name%3Dfoo', 'list', '', 'v1', 'other', 'pods', '', 'foo'],
  ['GET', '/api/v1/namespaces/other/pods?fieldSelector=metadata.name%3D%3Dfoo&watch=1', 'watch', '', 'v1', 'other', 'pods', '', 'foo'],
  ['GET', '/api/v1/namespaces/other/pods?fieldSelector=metadata.name!%3Dfoo', 'list', '', 'v1', 'other', 'pods', '', ''],
  ['GET', '/api/v1/namespaces/other/pods?fieldSelector=metadata.name%3D..', 'list', '', 'v1', 'other', 'pods', '', ''],
  ['DELETE', '/api/v1/namespaces/other/pods?fieldSelector=metadata.name%3Dfoo', 'deletecollection', '', 'v1', 'other', 'pods', '', ''],
  // Leading and trailing slashes are trimmed before the path is split, as Kubernetes does.
  ['GET', '/api/v1/namespaces/other/pods/', 'list', '', 'v1', 'other', 'pods', '', ''],
  ['GET', '/api/v1/namespaces/other/pods/foo///', 'get', '', 'v1', 'other', 'pods', '', 'foo'],
  ['GET', '/apis/apps/v1/namespaces/other/deployments/web/scale/', 'get', 'apps', 'v1', 'other', 'deployments', 'scale', 'web'],
];

t.test('resource requests', async (t) => {
  for (const [method, url, verb, group, version, ns, resource, sub, name] of rows) {
    const i = info(method, url);
    t.same({ res: i.isResourceRequest, verb: i.verb, group: i.apiGroup, version: i.apiVersion, ns: i.namespace, resource: i.resource, sub: i.subresource, name: i.name },
      { res: true, verb, group, version, ns, resource, sub, name }, `${method} ${url}`);
  }
});

t.test('the Namespace object is not a namespaced resource', async (t) => {
  const i = info('GET', '/api/v1/namespaces/kube-system');
  t.equal(i.resource, 'namespaces');
  t.equal(i.name, 'kube-system');
  t.same(i.parts, ['namespaces', 'kube-system']);
  const pods = info('GET', '/api/v1/namespaces/kube-system/pods');
  t.same(pods.parts, ['pods']);
  t.equal(pods.apiPrefix, 'api');
  t.equal(info('GET', '/apis/apps/v1/deployments').apiPrefix, 'apis');
});

t.test('non-resource requests', async (t) => {
  const cases: Array<[string, string, string]> = [
    ['GET', '/healthz', 'get'], ['GET', '/readyz/storage', 'get'], ['GET', '/version', 'get'],
    ['GET', '/api', 'get'], ['GET', '/api/v1', 'get'], ['GET', '/apis', 'get'], ['GET', '/apis/apps', 'get'],
    ['GET', '/apis/apps/v1', 'get'], ['POST', '/metrics', 'post'], ['GET', '/openapi/v2', 'get'],
    ['PUT', '/', 'put'], ['HEAD', '/healthz', 'head'],
  ];
  for (const [method, path, verb] of cases) {
    const i = info(method, path);
    t.equal(i.isResourceRequest, false, `${path} is non-resource`);
    t.equal(i.verb, verb, `${method} ${path} verb`);
    t.equal(i.path, path.split('?')[0]);
  }
});

t.test('query booleans', async (t) => {
  for (const v of ['1', 't', 'T', 'true', 'TRUE', 'True', '', 'yes']) t.equal(queryBool(v), true, `"${v}" is true`);
  for (const v of ['0', 'f', 'F', 'false', 'FALSE', 'False']) t.equal(queryBool(v), false, `"${v}" is false`);
  t.equal(queryBool(null), undefined);
});

t.test('long-running and read-only classification', async (t) => {
  const q = (s: string) => new URL(s, 'https://x').searchParams;
  const lr = (m: string, u: string) => isLongRunningRequest(info(m, u), q(u));
  t.ok(lr('GET', '/api/v1/pods?watch=1'));
  t.ok(lr('GET', '/api/v1/watch/pods'));
  t.ok(lr('POST', '/api/v1/namespaces/a/pods/p/exec?command=ls'));
  t.ok(lr('GET', '/api/v1/namespaces/a/pods/p/log?follow=true'));
  t.notOk(lr('GET', '/api/v1/namespaces/a/pods/p/log'));
  t.notOk(lr('GET', '/api/v1/pods'));
  t.notOk(lr('GET', '/healthz'));
  t.ok(isReadOnlyRequest(info('GET', '/api/v1/pods')));
  t.ok(isReadOnlyRequest(info('GET', '/healthz')));
  t.notOk(isReadOnlyRequest(info('POST', '/api/v1/namespaces/a/pods')));
  t.notOk(isReadOnlyRequest(info('DELETE', '/api/v1/namespaces/a/pods')));
});

t.test('percent escapes in segments are decoded, as Go\'s URL.Path is', async (t) => {
  const i = info('GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Acontroller%3Ax');
  t.equal(i.name, 'system:controller:x');
  t.equal(info('GET', '/api/v1/namespaces/a%2Db/pods/p').namespace, 'a-b');
  t.equal(info('GET', '/api/v1/namespaces/a/pods/%ff').name, '%ff', 'an escape that is no UTF-8 stays as it came');
});
