// pods/exec, attach and portforward in the API server, against a stand-in node agent (a plain
// HTTP server recording what reaches it): the path and query the agent gets, which caller
// headers are forwarded (upgrade ones only), Kubernetes' checks before any connection to the
// node, and the CVE-2018-1002105 rule: when the agent does not switch protocols, its answer is
// relayed and the caller's connection is closed, so nothing more reaches the agent over it.
import { createServer, type IncomingMessage } from 'node:http';
import { connect } from 'node:tls';
import { readFile } from 'node:fs/promises';
import t from 'tap';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { startApiserver } from '../helpers/apiserver.js';

const seen: IncomingMessage[] = [];
let answer: 'refuse' | 'switch' = 'refuse';
const agent = createServer((req, res) => { seen.push(req); res.writeHead(404); res.end(); });
agent.on('upgrade', (req: IncomingMessage, socket) => {
  seen.push(req);
  if (answer === 'refuse') {
    socket.end('HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: 6\r\n\r\nno way');
    return;
  }
  socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\nConnection: Upgrade\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n');
  socket.on('data', (d: Buffer) => socket.write(Buffer.from(d.toString().toUpperCase())));
});
await new Promise<void>((r) => agent.listen(0, '127.0.0.1', r));
const agentPort = (agent.address() as { port: number }).port;

const api = await startApiserver({ args: ['--nodeagent-https=false', '--nodeagent-preferred-address-types=InternalIP', '--nodeagent-allow-loopback=true'] });
const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
t.teardown(async () => { client.close(); await api.stop(); agent.close(); agent.closeAllConnections(); });

await client.create({ group: '', version: 'v1', resource: 'nodes' }, {
  apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' },
});
await client.patch({ group: '', version: 'v1', resource: 'nodes' }, 'n1', 'merge', {
  status: { addresses: [{ type: 'InternalIP', address: '127.0.0.1' }], daemonEndpoints: { kubeletEndpoint: { Port: agentPort } } },
}, { subresource: 'status' });
const PODS = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
await client.create(PODS, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { nodeName: 'n1', containers: [{ name: 'a', image: 'x' }, { name: 'b', image: 'x' }] } });
await client.create(PODS, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'solo' }, spec: { nodeName: 'n1', containers: [{ name: 'only', image: 'x' }] } });
await client.create(PODS, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'floating' }, spec: { containers: [{ name: 'c', image: 'x' }] } });

const tls = { ca: await readFile(api.caFile), cert: await readFile(api.clientCertFile), key: await readFile(api.clientKeyFile) };

/** One raw HTTP/1.1 exchange over TLS; `then` is written after the first response arrives. */
function raw(request: string, then?: string): Promise<{ first: string; rest: string; closed: boolean }> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port: api.port, ...tls, ALPNProtocols: ['http/1.1'], servername: 'localhost' });
    let buf = '';
    let first = '';
    s.on('secureConnect', () => s.write(request));
    s.on('data', (d: Buffer) => {
      buf += d.toString();
      const end = buf.indexOf('\r\n\r\n');
      const len = Number(/content-length: (\d+)/i.exec(buf.slice(0, end))?.[1] ?? 0);
      if (!first && end >= 0 && buf.length >= end + 4 + len) {
        first = buf;
        buf = '';
        if (then) s.write(then);
        else setTimeout(() => s.end(), 300);
      }
    });
    s.on('error', () => undefined);
    s.on('close', () => resolve({ first, rest: buf, closed: true }));
    setTimeout(() => { s.destroy(); }, 5000);
  });
}

const upgradeReq = (path: string, extra = ''): string => [
  `GET ${path} HTTP/1.1`, 'Host: localhost', 'Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13',
  'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Protocol: v5.channel.k8s.io', 'Cookie: session=secret', 'X-Private: 1', extra, '', '',
].filter((l, i, all) => l !== '' || i >= all.length - 2).join('\r\n');

t.test('the agent gets the node path and only upgrade headers; a refusal closes the connection', async (t) => {
  seen.length = 0;
  answer = 'refuse';
  const r = await raw(upgradeReq('/api/v1/namespaces/default/pods/p/exec?command=ls&command=-l&container=b&stdout=true&stderr=true'),
    'GET /exec/default/p/a?command=id&output=1 HTTP/1.1\r\nHost: x\r\n\r\n');
  t.match(r.first, /^HTTP\/1\.1 403/, 'the agent\'s answer is relayed');
  t.match(r.first, /no way/);
  t.ok(r.closed, 'and the connection is closed');
  t.equal(seen.length, 1, 'the request smuggled after the refusal never reached the agent');
  const req = seen[0]!;
  t.equal(req.url, '/exec/default/p/b?command=ls&command=-l&output=1&error=1');
  t.equal(req.headers['sec-websocket-key'], 'dGhlIHNhbXBsZSBub25jZQ==');
  t.equal(req.headers['sec-websocket-protocol'], 'v5.channel.k8s.io');
  t.notOk(req.headers.cookie, 'no cookies');
  t.notOk(req.headers['x-private'], 'no other caller headers');
  t.notOk(req.headers.authorization);
});

t.test('a switch splices the connections', async (t) => {
  answer = 'switch';
  const r = await raw(upgradeReq('/api/v1/namespaces/default/pods/solo/attach?stdin=true&stdout=true'), 'echo me');
  t.match(r.first, /^HTTP\/1\.1 101/);
  t.match(r.first, /X-Stream-Protocol-Version: v4\.channel\.k8s\.io/i, 'the agent\'s response headers come back');
  t.equal(r.rest, 'ECHO ME', 'bytes flow both ways');
  t.equal(seen.at(-1)?.url, '/attach/default/solo/only?input=1&output=1', 'the only container is chosen');
  const pf = await raw(upgradeReq('/api/v1/namespaces/default/pods/solo/portforward?ports=80,8080'), 'x');
  t.match(pf.first, /^HTTP\/1\.1 101/);
  t.equal(seen.at(-1)?.url, '/portForward/default/solo?port=80&port=8080');
});

t.test('Kubernetes\' checks come first', async (t) => {
  const before = seen.length;
  const cases: Array<[string, RegExp]> = [
    ['/api/v1/namespaces/default/pods/p/exec?command=ls&stdout=true', /a container name must be specified for pod p, choose one of: \[a b\]/],
    ['/api/v1/namespaces/default/pods/p/exec?command=ls&container=zz&stdout=true', /container zz is not valid for pod p/],
    ['/api/v1/namespaces/default/pods/solo/exec?command=ls', /you must specify at least one of stdin, stdout, stderr/],
    ['/api/v1/namespaces/default/pods/floating/exec?command=ls&stdout=true', /pod floating does not have a host assigned/],
    ['/api/v1/namespaces/default/pods/solo/portforward?ports=99999', /invalid port/],
    ['/api/v1/namespaces/default/pods/ghost/exec?command=ls&stdout=true', /pods \\"ghost\\" not found/],
  ];
  for (const [path, re] of cases) {
    const r = await raw(upgradeReq(path));
    t.match(r.first, /^HTTP\/1\.1 4\d\d/, path);
    t.match(r.first, re);
  }
  t.equal(seen.length, before, 'none reached the node');
  const plain = await raw('POST /api/v1/namespaces/default/pods/solo/exec?command=ls&stdout=true HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n');
  t.match(plain.first, /^HTTP\/1\.1 400[\s\S]*Upgrade request required/, 'without an upgrade: 400');
});
