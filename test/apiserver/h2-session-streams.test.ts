// The wiring of util/h2-stream-table.ts: the API server's sessions and the client library's
// sessions keep their streams in a StreamTable (and pending streams in a PendingStreams), not
// in Node's Map and Set, whose left-behind tables kept finished requests alive through
// young-generation GCs.
import t from 'tap';
import http2 from 'node:http2';
import { syncBuiltinESMExports } from 'node:module';
import { Http2Transport } from '../../src/client/transport.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { PendingStreams, StreamTable } from '../../src/util/h2-stream-table.js';
import { startApiserver } from '../helpers/apiserver.js';
import { sessionState } from '../helpers/h2-session-state.js';

t.test('server and client sessions keep their streams in the stream table', async (t) => {
  // Note every session the server and the client library make (their `import * as http2`
  // bindings follow the builtin once synced).
  const serverSessions: http2.ServerHttp2Session[] = [];
  const clientSessions: http2.ClientHttp2Session[] = [];
  const createSecureServer = http2.createSecureServer;
  const connect = http2.connect;
  (http2 as { createSecureServer: unknown }).createSecureServer = (...a: Parameters<typeof createSecureServer>) => {
    const server = createSecureServer(...a);
    server.on('session', (s) => serverSessions.push(s));
    return server;
  };
  (http2 as { connect: unknown }).connect = (...a: Parameters<typeof connect>) => {
    const s = connect(...a);
    clientSessions.push(s);
    return s;
  };
  syncBuiltinESMExports();
  t.teardown(() => {
    (http2 as { createSecureServer: unknown }).createSecureServer = createSecureServer;
    (http2 as { connect: unknown }).connect = connect;
    syncBuiltinESMExports();
  });

  const api = await startApiserver({ servingOnly: true });
  t.teardown(() => api.stop());
  const transport = new Http2Transport(await loadCoreconfig({ path: api.coreconfigPath }));
  t.teardown(() => transport.close());
  const res = await transport.request({ method: 'GET', path: '/version' });
  t.equal(res.status, 200);
  res.close();

  t.equal(clientSessions.length, 1, 'the client library made one session');
  t.ok(sessionState(clientSessions[0]!).streams instanceof StreamTable, 'client: stream table');
  t.ok(sessionState(clientSessions[0]!).pendingStreams instanceof PendingStreams, 'client: pending streams');
  t.equal(serverSessions.length, 1, 'the server saw one session');
  t.ok(sessionState(serverSessions[0]!).streams instanceof StreamTable, 'server: stream table');
  t.ok(sessionState(serverSessions[0]!).pendingStreams instanceof PendingStreams, 'server: pending streams');
});
