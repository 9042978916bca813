// --cors-allowed-origins: an allowed Origin gets Kubernetes' CORS headers and its preflight a 204
// before authentication; other origins and requests without one pass untouched; a pattern that
// is not a regular expression fails start-up naming the option; without the option CORS is off.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { parseApiserverArgs } from '../../src/flags/apiserver.js';
import { servingOptionsFromConfig } from '../../src/daemons/apiserver/main.js';
import { h1request, h2request, startApiserver } from '../helpers/apiserver.js';

t.test('allowed origins get CORS headers; a preflight is answered without credentials', async (t) => {
  const api = await startApiserver({ args: ['--cors-allowed-origins=^https://ui\\.example\\.com$,//localhost(:[0-9]+)?$', '--anonymous-auth=false'] });
  t.teardown(() => api.stop());
  const ca = await readFile(api.caFile);
  const creds = { ca, cert: await readFile(api.clientCertFile), key: await readFile(api.clientKeyFile) };

  const pre = await h2request(api.url, { path: '/api/v1/namespaces/default/pods', method: 'OPTIONS', ca, headers: { origin: 'https://ui.example.com', 'access-control-request-method': 'GET' } });
  t.equal(pre.status, 204, 'preflight answered before authentication (anonymous is off)');
  t.equal(pre.headers['access-control-allow-origin'], 'https://ui.example.com');
  t.equal(pre.headers['access-control-allow-methods'], 'POST, GET, OPTIONS, PUT, DELETE, PATCH');
  t.equal(pre.headers['access-control-allow-headers'], 'Content-Type, Content-Length, Accept-Encoding, X-CSRF-Token, Authorization, X-Requested-With, If-Modified-Since');
  t.equal(pre.headers['access-control-expose-headers'], 'Date');
  t.equal(pre.headers['access-control-allow-credentials'], 'true');
  t.equal(pre.body, '');

  const get = await h2request(api.url, { path: '/api/v1/namespaces', ...creds, headers: { origin: 'http://localhost:8001' } });
  t.equal(get.status, 200);
  t.equal(get.headers['access-control-allow-origin'], 'http://localhost:8001', 'second pattern matches');
  t.match(get.body, /"kind":"NamespaceList"/);

  const h1 = await h1request(api.url, { path: '/api/v1/namespaces', ...creds, headers: { origin: 'https://ui.example.com' } });
  t.equal(h1.headers['access-control-allow-origin'], 'https://ui.example.com', 'HTTP/1.1 as well');

  const denied = await h2request(api.url, { path: '/api/v1/namespaces', ...creds, headers: { origin: 'https://evil.example.com' } });
  t.equal(denied.status, 200, 'another origin is served as any request');
  t.equal(denied.headers['access-control-allow-origin'], undefined, 'but without CORS headers');
  const unauth = await h2request(api.url, { path: '/api/v1/namespaces', method: 'OPTIONS', ca, headers: { origin: 'https://evil.example.com' } });
  t.equal(unauth.status, 401, 'its preflight goes through authentication');

  const none = await h2request(api.url, { path: '/api/v1/namespaces', ...creds });
  t.equal(none.headers['access-control-allow-origin'], undefined, 'no Origin: no CORS headers');
});

t.test('without the option CORS is off', async (t) => {
  const api = await startApiserver();
  t.teardown(() => api.stop());
  const ca = await readFile(api.caFile);
  const r = await h2request(api.url, { path: '/healthz', ca, cert: await readFile(api.clientCertFile), key: await readFile(api.clientKeyFile), headers: { origin: 'https://ui.example.com' } });
  t.equal(r.status, 200);
  t.equal(r.headers['access-control-allow-origin'], undefined);
});

t.test('a pattern that is not a regular expression fails start-up naming the option', async (t) => {
  const { config } = parseApiserverArgs(['--cors-allowed-origins=(unclosed']);
  t.throws(() => servingOptionsFromConfig(config), /--cors-allowed-origins.*invalid CORS allowed origin "\(unclosed"/);
});
