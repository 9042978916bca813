// What goes to an extension server: never the caller's credentials (Authorization,
// Impersonate-*) nor identity headers the caller sent itself; the authenticated user in the
// configured request-header headers, extra keys %-encoded.
import t from 'tap';
import { backendHeaders } from '../../../src/daemons/apiserver/aggregator/proxy.js';
import { identityHeaderNamesOf } from '../../../src/daemons/apiserver/aggregator/install.js';
import type { ApiRequest, RequestContext } from '../../../src/daemons/apiserver/context.js';

t.test('credentials and forged identity headers are dropped; the authenticated user is sent', async (t) => {
  const req = {
    headers: {
      host: 'apiserver:6443', authorization: 'Bearer secret', 'impersonate-user': 'root', 'impersonate-group': 'system:masters',
      'x-remote-user': 'forged', 'x-remote-group': 'system:masters', 'x-remote-extra-scopes': 'all', 'x-front-user': 'forged-too',
      accept: 'application/json', connection: 'keep-alive', 'user-agent': 'kubectl',
    },
    socket: { remoteAddress: '10.0.0.9' },
  } as unknown as ApiRequest;
  const ctx = { user: { name: 'jane', groups: ['dev', 'system:authenticated'], extra: { 'acme.com/project': ['p1', 'p2'] } } } as unknown as RequestContext;
  const names = identityHeaderNamesOf({ requestheaderUsernameHeaders: ['X-Front-User'], requestheaderGroupHeaders: [], requestheaderExtraHeadersPrefix: [] });
  t.same(names, { user: 'X-Front-User', group: 'X-Remote-Group', extraPrefix: 'X-Remote-Extra-' }, 'the first configured name, else the standard one');
  const h = backendHeaders(ctx, req, { host: '10.1.2.3', port: 8443, serverName: 'api.wardle.svc' }, names);
  t.same(h, {
    accept: 'application/json', 'user-agent': 'kubectl', 'x-forwarded-for': '10.0.0.9', host: '10.1.2.3:8443',
    'x-front-user': 'jane', 'x-remote-group': ['dev', 'system:authenticated'], 'x-remote-extra-acme.com%2fproject': ['p1', 'p2'],
  });
});
