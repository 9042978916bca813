/**
 * Real kubectl exec, attach and port-forward through the API server and the node agent to a
 * private containerd (skipped unless root with containerd installed). kubectl 1.33 speaks
 * WebSocket (v5 channels; port-forward SPDY tunnelled in WebSocket), kubectl 1.27 SPDY/3.1; both
 * must work: output, stdin with EOF (`echo | exec -i cat`), exit codes, a TTY, attach to a
 * running container, `run --attach` and `run -i --rm`, and a page fetched through
 * `kubectl port-forward`.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { get } from 'node:http';
import { request } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { WebSocket } from 'ws';
import type { KubeObject } from '../../src/api/resources/types.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { parseNodeagentArgs } from '../../src/flags/nodeagent.js';
import { startNodeAgent, type NodeAgent } from '../../src/daemons/nodeagent/main.js';
import type { Pod } from '../../src/daemons/nodeagent/pod-types.js';
import { createCA, issueCert, writePemFile } from '../../src/util/pki.js';
import { startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { containerdSkipReason, startContainerd, type StartedContainerd } from '../helpers/containerd.js';
import { kubectl } from '../helpers/kubectl.js';
import { eventually } from '../helpers/rest-client.js';
import { kubectlRunner } from '../helpers/kubectl-run.js';

const skip = containerdSkipReason();
const versions = [33, 27].filter((v) => kubectl(v));
if (skip || versions.length === 0) {
  t.plan(0, skip ? `containerd: ${skip}` : 'no kubectl.1.33 or kubectl.1.27');
} else {
  await main();
}

interface Result { code: number; stdout: string; stderr: string }

function fetchPage(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/index.html', agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve(Buffer.concat(chunks).toString()));
    }).on('error', reject);
  });
}

/** Waits for a line matching `re` on the child's stdout. */
function waitOutput(child: ChildProcess, re: RegExp, timeoutMs = 20_000): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${re} in: ${out}`)), timeoutMs);
    const onData = (d: Buffer): void => {
      out += d.toString();
      const m = re.exec(out);
      if (m) { clearTimeout(timer); child.stdout?.off('data', onData); resolve(m); }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (d: Buffer) => { out += d.toString(); });
  });
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-exec-e2e-'));
  let containerd: StartedContainerd | undefined;
  let api: StartedApiserver | undefined;
  let agent: NodeAgent | undefined;
  let client: RestClient | undefined;
  const children: ChildProcess[] = [];
  t.teardown(async () => {
    for (const c of children) c.kill('SIGKILL');
    await agent?.stop({ stopPods: true }).catch(() => undefined);
    client?.close();
    await api?.stop();
    await containerd?.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const file = (n: string): string => join(dir, n);
  const nodeCa = await createCA({ commonName: 'node-ca' });
  const apiClient = await issueCert({ ca: nodeCa, commonName: 'kube-apiserver-kubelet-client', organizations: ['system:masters'], usages: 'client' });
  const serving = await issueCert({ ca: nodeCa, commonName: 'exec-node', dnsNames: ['exec-node', 'localhost'], ips: ['127.0.0.1'], usages: 'server' });
  await Promise.all([
    writePemFile(file('ca.crt'), nodeCa.certPem), writePemFile(file('client.crt'), apiClient.certPem), writePemFile(file('client.key'), apiClient.keyPem),
    writePemFile(file('serving.crt'), serving.certPem), writePemFile(file('serving.key'), serving.keyPem),
  ]);
  containerd = await startContainerd();
  api = await startApiserver({
    args: [
      `--nodeagent-client-certificate=${file('client.crt')}`, `--nodeagent-client-key=${file('client.key')}`,
      `--nodeagent-certificate-authority=${file('ca.crt')}`, '--nodeagent-preferred-address-types=InternalIP',
      // The node agent here listens on loopback only.
      '--nodeagent-allow-loopback=true',
    ],
  });
  client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
  const { config } = parseNodeagentArgs([
    '--container-runtime=remote', `--container-runtime-endpoint=${containerd.endpoint}`, `--coreconfig=${api.coreconfigPath}`,
    '--hostname-override=exec-node', `--root-dir=${file('root')}`, `--cert-dir=${file('pki')}`, '--port=0', '--read-only-port=0',
    '--healthz-port=0', '--fail-swap-on=false', '--address=127.0.0.1', '--node-ip=127.0.0.1', '--resolv-conf=', '--event-qps=0',
    `--client-ca-file=${file('ca.crt')}`, `--tls-cert-file=${file('serving.crt')}`, `--tls-private-key-file=${file('serving.key')}`,
    '--anonymous-auth=false',
  ]);
  agent = await startNodeAgent(config, { podLogDir: file('logs'), relistPeriodMs: 200, skipProcessTweaks: true });
  const PODS = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
  const pod = (name: string, command: string[], extra: Record<string, unknown> = {}): KubeObject => ({
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default' },
    spec: { nodeName: 'exec-node', terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent', command, ...extra }] },
  });
  await client.create(PODS, pod('web', ['sh', '-c', 'mkdir -p /www && echo "hello through port-forward" > /www/index.html && exec httpd -f -p 8080 -h /www']));
  await client.create(PODS, pod('ticker', ['sh', '-c', 'i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.5; done']));
  for (const name of ['web', 'ticker']) {
    await eventually(async () => (await client!.get<Pod>(PODS, name)).status?.phase === 'Running', 60_000);
  }

  const tls = { ca: await readFile(api.caFile), cert: await readFile(api.clientCertFile), key: await readFile(api.clientKeyFile) };
  const wsBase = api.url.replace(/^https/, 'wss');
  /** Opens a WebSocket to the API server and collects messages per channel until it closes. */
  const wsSession = (path: string, protocol: string, opts: { cert?: boolean; onOpen?: (ws: WebSocket) => void } = {}) => new Promise<{ channels: Map<number, Buffer>; order: number[]; code?: number; error?: string; protocol: string }>((resolve) => {
    const ws = new WebSocket(`${wsBase}${path}`, protocol ? protocol.split(',') : [], { ca: tls.ca, ...(opts.cert === false ? { headers: { authorization: 'Bearer not-a-known-token' } } : { cert: tls.cert, key: tls.key }) });
    const channels = new Map<number, Buffer>();
    const order: number[] = [];
    ws.on('open', () => opts.onOpen?.(ws));
    ws.on('message', (m: Buffer, binary: boolean) => {
      let ch: number;
      let data: Buffer;
      if (binary) { ch = m[0]!; data = m.subarray(1); } else { const s = m.toString(); ch = s.charCodeAt(0) - 48; data = Buffer.from(s.slice(1), 'base64'); }
      order.push(ch);
      channels.set(ch, Buffer.concat([channels.get(ch) ?? Buffer.alloc(0), data]));
    });
    ws.on('unexpected-response', (_req, res) => resolve({ channels, order, code: res.statusCode ?? 0, protocol: '' }));
    ws.on('error', (e) => resolve({ channels, order, error: e.message, protocol: '' }));
    ws.on('close', () => resolve({ channels, order, protocol: ws.protocol }));
  });
  const execPath = (cmd: string[], extra = 'stdout=true&stderr=true'): string => `/api/v1/namespaces/default/pods/web/exec?${cmd.map((c) => `command=${encodeURIComponent(c)}`).join('&')}&${extra}`;

  t.test('WebSocket protocols as other clients use them', async (t) => {
    const v4 = await wsSession(execPath(['sh', '-c', 'echo out; echo err >&2; exit 2']), 'v4.channel.k8s.io');
    t.equal(v4.protocol, 'v4.channel.k8s.io', 'v4 negotiated (the Python client offers only it)');
    t.equal(v4.channels.get(1)?.toString(), 'out\n');
    t.equal(v4.channels.get(2)?.toString(), 'err\n');
    const status = JSON.parse(v4.channels.get(3)?.toString() ?? '{}');
    t.match(status, { status: 'Failure', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '2' }] } }, 'v4 Status with the exit code');
    const b64 = await wsSession(execPath(['echo', 'hi']), 'base64.channel.k8s.io');
    t.equal(b64.protocol, 'base64.channel.k8s.io');
    t.equal(b64.channels.get(1)?.toString(), 'hi\n', 'base64 text frames decode to the output');
    const js = await wsSession(execPath(['echo', 'js']), 'v5.channel.k8s.io,v4.channel.k8s.io,v3.channel.k8s.io,v2.channel.k8s.io,channel.k8s.io');
    t.equal(js.channels.get(1)?.toString(), 'js\n');
    const stdin = await wsSession(execPath(['cat'], 'stdin=true&stdout=true'), 'v5.channel.k8s.io', {
      onOpen: (ws) => { ws.send(Buffer.concat([Buffer.from([0]), Buffer.from('typed\n')])); ws.send(Buffer.from([255, 0])); },
    });
    t.equal(stdin.channels.get(1)?.toString(), 'typed\n', 'v5 closes stdin with [255, 0]');
    t.match(JSON.parse(stdin.channels.get(3)?.toString() ?? '{}'), { status: 'Success' });
    // The JS client's port-forward: channel 0 data, 1 error, each opened with the port (LE).
    const pf = await wsSession('/api/v1/namespaces/default/pods/web/portforward?ports=8080', 'v4.channel.k8s.io', {
      onOpen: (ws) => { ws.send(Buffer.concat([Buffer.from([0]), Buffer.from('GET /index.html HTTP/1.0\r\nHost: x\r\n\r\n')])); setTimeout(() => ws.close(), 1500); },
    });
    t.same(pf.order.slice(0, 2).sort(), [0, 1], 'both channels announced');
    const data = pf.channels.get(0) ?? Buffer.alloc(0);
    t.equal(data.readUInt16LE(0), 8080, 'the data channel starts with the port');
    t.match(data.subarray(2).toString(), /200 OK[\s\S]*hello through port-forward/, 'the page through the data channel');
    const unauth = await wsSession(execPath(['true']), 'v4.channel.k8s.io', { cert: false });
    t.equal(unauth.code, 401, 'a bad token gets no upgrade');
    const bad = await wsSession(execPath(['true'], 'stdout=false'), 'v4.channel.k8s.io');
    t.equal(bad.code, 400, 'no stream asked for');
    const noProto = await wsSession(execPath(['true']), 'v9.channel.k8s.io');
    t.ok(noProto.code === 400 || noProto.error, 'an unknown subprotocol is refused');
  });

  t.test('pods/proxy, services/proxy and kubectl proxy reach the pod over its IP', async (t) => {
    const v = versions[0]!;
    const kc = kubectlRunner(kubectl(v)!, api!.coreconfigPath, file(`cache-proxy-${v}`)).run;
    const page = await kc(['get', '--raw', '/api/v1/namespaces/default/pods/web:8080/proxy/index.html']);
    t.equal(page.code, 0, page.stderr);
    t.equal(page.stdout, 'hello through port-forward\n', 'a page through pods/proxy');
    // A redirect of the pod's (busybox httpd sends a directory to its slash) comes back through the proxy.
    t.equal((await kc(['exec', 'web', '--', 'sh', '-c', 'mkdir -p /www/sub && echo sub page > /www/sub/index.html'])).code, 0);
    const redirect = await new Promise<{ code: number; location: string }>((resolve, reject) => {
      const r = request(`${api!.url}/api/v1/namespaces/default/pods/web:8080/proxy/sub`, { ...tls }, (res) => { res.resume(); resolve({ code: res.statusCode ?? 0, location: String(res.headers.location ?? '') }); });
      r.on('error', reject);
      r.end();
    });
    t.ok(redirect.code === 301 || redirect.code === 302, `redirected (${redirect.code})`);
    t.equal(redirect.location, '/api/v1/namespaces/default/pods/web:8080/proxy/sub/', 'the Location goes through the proxy');
    // A body goes through too (a CGI script of busybox httpd echoes it), over HTTP/1.1 and HTTP/2.
    t.equal((await kc(['exec', 'web', '--', 'sh', '-c', 'mkdir -p /www/cgi-bin && printf "#!/bin/sh\\necho Content-Type: text/plain\\necho\\necho method=\\$REQUEST_METHOD\\ncat\\n" > /www/cgi-bin/echo && chmod +x /www/cgi-bin/echo'])).code, 0);
    const cgi = '/api/v1/namespaces/default/pods/web:8080/proxy/cgi-bin/echo';
    const h1 = await new Promise<string>((resolve, reject) => {
      const r = request(`${api!.url}${cgi}`, { ...tls, method: 'POST', headers: { 'content-type': 'text/plain', 'content-length': '12' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => resolve(Buffer.concat(chunks).toString()));
      });
      r.on('error', reject);
      r.end('posted h1 ok');
    });
    t.equal(h1, 'method=POST\nposted h1 ok', 'an HTTP/1.1 POST body reaches the pod');
    const session = http2.connect(api!.url, tls);
    const h2 = await new Promise<string>((resolve, reject) => {
      const r = session.request({ ':method': 'POST', ':path': cgi, 'content-type': 'text/plain', 'content-length': '12' });
      const chunks: Buffer[] = [];
      r.on('data', (d: Buffer) => chunks.push(d));
      r.on('end', () => resolve(Buffer.concat(chunks).toString()));
      r.on('error', reject);
      r.end('posted h2 ok');
    });
    session.close();
    t.equal(h2, 'method=POST\nposted h2 ok', 'an HTTP/2 POST body reaches the pod');
    // A service without a selector, its Endpoints naming the pod (no endpoint controller runs here).
    const ip = (await client!.get<Pod>(PODS, 'web')).status?.podIP ?? '';
    await client!.create({ group: '', version: 'v1', resource: 'services', namespace: 'default' }, { metadata: { name: 'web-svc' }, spec: { ports: [{ name: 'http', port: 80, targetPort: 8080 }] } });
    await client!.create({ group: '', version: 'v1', resource: 'endpoints', namespace: 'default' }, {
      metadata: { name: 'web-svc' }, subsets: [{ addresses: [{ ip, targetRef: { kind: 'Pod', name: 'web', namespace: 'default' } }], ports: [{ name: 'http', port: 8080 }] }],
    });
    for (const id of ['web-svc:80', 'web-svc:http']) {
      const viaSvc = await kc(['get', '--raw', `/api/v1/namespaces/default/services/${id}/proxy/sub/index.html`]);
      t.equal(viaSvc.stdout, 'sub page\n', `a page through services/proxy (${id})`);
    }
    // kubectl proxy, as people browse a service.
    const child = spawn(kubectl(v)!, [`--kubeconfig=${api!.coreconfigPath}`, 'proxy', '--port=0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    const m = await waitOutput(child, /Starting to serve on 127\.0\.0\.1:(\d+)/);
    const viaKubectl = await new Promise<string>((resolve, reject) => {
      get({ host: '127.0.0.1', port: Number(m[1]), path: '/api/v1/namespaces/default/services/web-svc:http/proxy/index.html', agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => resolve(Buffer.concat(chunks).toString()));
      }).on('error', reject);
    });
    t.equal(viaKubectl, 'hello through port-forward\n', 'through kubectl proxy');
    child.kill('SIGTERM');
  });

  t.test('upgrades through pods/proxy and services/proxy: spliced on 101, relayed and closed otherwise', async (t) => {
    // An "echo" protocol server in a pod: busybox nc runs the script per connection; it answers
    // 101 and echoes what follows.
    const script = [
      '#!/bin/sh',
      'while read -r l; do l=$(printf "%s" "$l" | tr -d "\\r"); [ -z "$l" ] && break; done',
      'printf "HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: echo\\r\\nConnection: Upgrade\\r\\n\\r\\n"',
      'exec cat',
    ].join('\n');
    await client!.create(PODS, pod('upg', ['sh', '-c', `cat > /srv.sh <<'EOS'\n${script}\nEOS\nchmod +x /srv.sh; exec nc -ll -p 9000 -e /srv.sh`]));
    await eventually(async () => (await client!.get<Pod>(PODS, 'upg')).status?.phase === 'Running', 60_000);
    const ip = (await client!.get<Pod>(PODS, 'upg')).status?.podIP ?? '';
    await client!.create({ group: '', version: 'v1', resource: 'services', namespace: 'default' }, { metadata: { name: 'upg-svc' }, spec: { ports: [{ name: 'echo', port: 90, targetPort: 9000 }] } });
    await client!.create({ group: '', version: 'v1', resource: 'endpoints', namespace: 'default' }, {
      metadata: { name: 'upg-svc' }, subsets: [{ addresses: [{ ip, targetRef: { kind: 'Pod', name: 'upg', namespace: 'default' } }], ports: [{ name: 'echo', port: 9000 }] }],
    });
    const url = new URL(api!.url);
    /** Sends an upgrade request over HTTP/1.1; returns the head, then what `send` got back. */
    const upgradeOnce = (path: string, send: string): Promise<{ head: string; echoed: string; ended: boolean }> => new Promise((resolve, reject) => {
      const s = tlsConnect({ host: url.hostname, port: Number(url.port), ...tls, ALPNProtocols: ['http/1.1'] });
      let buf = '', head = '', ended = false;
      const timer = setTimeout(() => { s.destroy(); resolve({ head, echoed: buf, ended }); }, 5000);
      s.on('secureConnect', () => s.write(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n`));
      s.on('data', (d: Buffer) => {
        buf += d.toString();
        if (!head && buf.includes('\r\n\r\n')) {
          const at = buf.indexOf('\r\n\r\n');
          head = buf.slice(0, at);
          buf = buf.slice(at + 4);
          if (head.startsWith('HTTP/1.1 101')) s.write(send);
        }
        if (head.startsWith('HTTP/1.1 101') && buf.includes(send)) { clearTimeout(timer); s.destroy(); resolve({ head, echoed: buf, ended }); }
      });
      s.on('end', () => { ended = true; });
      s.on('close', () => { clearTimeout(timer); resolve({ head, echoed: buf, ended }); });
      s.on('error', reject);
    });
    const viaPod = await upgradeOnce('/api/v1/namespaces/default/pods/upg:9000/proxy/chat', 'ping through the pod proxy\n');
    t.match(viaPod.head, /^HTTP\/1\.1 101/, 'the pod switched protocols');
    t.match(viaPod.head, /upgrade: echo/i);
    t.equal(viaPod.echoed, 'ping through the pod proxy\n', 'the two connections are spliced');
    const viaSvc = await upgradeOnce('/api/v1/namespaces/default/services/upg-svc:echo/proxy/', 'ping through the service proxy\n');
    t.equal(viaSvc.echoed, 'ping through the service proxy\n', 'through services/proxy too');
    const refused = await upgradeOnce('/api/v1/namespaces/default/pods/web:8080/proxy/index.html', 'never sent\n');
    t.match(refused.head, /^HTTP\/1\.1 (200|4\d\d)/, `a target that does not switch: its answer is relayed (${refused.head.split('\r\n')[0]})`);
    t.notMatch(refused.head, /^HTTP\/1\.1 101/);
    t.ok(refused.ended, 'and the connection ends');
  });

  for (const v of versions) {
    const bin = kubectl(v)!;
    const args = [`--kubeconfig=${api.coreconfigPath}`, `--cache-dir=${file(`cache-${v}`)}`];
    const kc = kubectlRunner(bin, api.coreconfigPath, file(`cache-${v}`)).run;

    t.test(`kubectl 1.${v} exec`, async (t) => {
      const host = await kc(['exec', 'web', '--', 'cat', '/etc/hostname']);
      t.equal(host.code, 0, host.stderr);
      t.equal(host.stdout.trim(), 'web', 'prints the pod name');
      const both = await kc(['exec', 'web', '--', 'sh', '-c', 'echo out; echo err >&2']);
      t.equal(both.stdout, 'out\n');
      t.equal(both.stderr, 'err\n', 'stderr kept apart');
      const piped = await kc(['exec', '-i', 'web', '--', 'cat'], 'line one\nline two\n');
      t.equal(piped.code, 0, piped.stderr);
      t.equal(piped.stdout, 'line one\nline two\n', 'stdin reaches the command and its EOF ends it');
      const failing = await kc(['exec', 'web', '--', 'sh', '-c', 'exit 3']);
      t.equal(failing.code, 3, 'kubectl exits with the command\'s code');
      // kubectl asks for a TTY only when its own stdin is one: `script` (bsdutils) gives it a pty.
      // The first resize may land just after the command starts, hence the polling stty.
      const script = 'for i in $(seq 100); do s=$(stty size 2>/dev/null); [ "$s" = "30 100" ] && break; sleep 0.1; done; echo "size=$s"; test -t 0 && test -t 1 && echo is-a-tty';
      const line = ['stty cols 100 rows 30;', bin, ...args, 'exec', '-it', 'web', '--', 'sh', '-c', `'${script.replaceAll("'", "'\\''")}'`].join(' ');
      const tty = await new Promise<Result>((resolve) => {
        execFile('script', ['-qec', line, '/dev/null'], { timeout: 30_000 }, (err, stdout, stderr) => {
          resolve({ code: err ? 1 : 0, stdout: String(stdout), stderr: String(stderr) });
        });
      });
      t.match(tty.stdout, /is-a-tty/, `a TTY was allocated (${JSON.stringify(tty)})`);
      t.match(tty.stdout, /size=30 100/, `the terminal size was sent (${JSON.stringify(tty.stdout)})`);
      const missing = await kc(['exec', 'web', '-c', 'nope', '--', 'true']);
      t.not(missing.code, 0);
      t.match(missing.stderr, /container nope is not valid for pod web/);
    });

    t.test(`kubectl 1.${v} cp both ways (tar through exec stdin and stdout)`, async (t) => {
      const data = randomBytes(300_000);
      const local = file(`blob-${v}`);
      await writeFile(local, data);
      const up = await kc(['cp', local, `web:/tmp/blob-${v}`]);
      t.equal(up.code, 0, up.stderr);
      const sum = await kc(['exec', 'web', '--', 'md5sum', `/tmp/blob-${v}`]);
      t.equal(sum.stdout.split(' ')[0], createHash('md5').update(data).digest('hex'), 'the bytes arrived intact');
      const back = file(`back-${v}`);
      const down = await kc(['cp', `web:/tmp/blob-${v}`, back]);
      t.equal(down.code, 0, down.stderr);
      t.ok((await readFile(back)).equals(data), 'and came back intact');
    });

    t.test(`kubectl 1.${v} attach`, async (t) => {
      const child = spawn(bin, [...args, 'attach', 'ticker'], { stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(child);
      const m = await waitOutput(child, /tick (\d+)\n/);
      t.ok(Number(m[1]) > 0, 'live output of the running container');
      child.kill('SIGTERM');
    });

    t.test(`kubectl 1.${v} run --attach and run -i --rm`, async (t) => {
      const over = '--overrides={"apiVersion":"v1","spec":{"nodeName":"exec-node"}}';
      const common = ['--image=localhost/busybox:latest', '--image-pull-policy=IfNotPresent', '--restart=Never', over];
      const attached = await kc(['run', `talk-${v}`, ...common, '--attach', '--', 'sh', '-c', 'sleep 2; echo attached output']);
      t.equal(attached.code, 0, attached.stderr);
      t.match(attached.stdout, /attached output/, 'output of the attached container');
      const cat = await kc(['run', `cat-${v}`, ...common, '-i', '--rm', '--', 'cat'], 'through stdin\n');
      t.equal(cat.code, 0, cat.stderr);
      t.match(cat.stdout, /through stdin/, 'stdin reached the new pod and its EOF ended it');
      await eventually(async () => (await kc(['get', 'pod', `cat-${v}`, '--ignore-not-found', '-o', 'name'])).stdout === '', 30_000);
    });

    t.test(`kubectl 1.${v} debug: an ephemeral container in the target's process namespace`, async (t) => {
      const name = `dbg-${v}`;
      const r = await kc(['debug', 'ticker', '-c', name, '--image=localhost/busybox:latest', '--image-pull-policy=IfNotPresent', '--target=main', '--', 'sh', '-c', 'ps; echo debug-done']);
      t.equal(r.code, 0, r.stderr);
      const p = await client!.get<Pod>(PODS, 'ticker');
      t.ok(p.spec?.ephemeralContainers?.some((c) => c.name === name && c.targetContainerName === 'main'), 'added to the pod spec');
      const st = await eventually(async () => (await client!.get<Pod>(PODS, 'ticker')).status?.ephemeralContainerStatuses?.find((c) => c.name === name && c.state.terminated), 30_000);
      t.equal(st?.state.terminated?.exitCode, 0, 'it ran once and ended');
      const logs = await kc(['logs', 'ticker', '-c', name]);
      t.match(logs.stdout, /debug-done/, 'its output is in its log');
      t.match(logs.stdout, /while true/, `it saw the target container's processes (${JSON.stringify(logs.stdout)})`);
      t.equal((await client!.get<Pod>(PODS, 'ticker')).status?.phase, 'Running', 'the pod runs on');
    });

    t.test(`kubectl 1.${v} debug -i: a shell attached to a new ephemeral container`, async (t) => {
      // As a person uses it: type once the prompt hint shows, read the answer, then leave. (The
      // runtime detaches the output when stdin ends, as containerd does for a container without
      // stdinOnce, so the input stays open until the answer came.) The line is typed again until
      // it is answered: what the shell writes before the runtime has wired the attached output
      // reaches only the log.
      const child = spawn(bin, [...args, 'debug', 'ticker', '-i', '-c', `dbg-${v}-i`, '--image=localhost/busybox:latest', '--image-pull-policy=IfNotPresent', '--', 'sh'], { stdio: ['pipe', 'pipe', 'pipe'] });
      children.push(child);
      let stderr = '';
      child.stderr?.on('data', (d: Buffer) => { stderr += d.toString(); });
      const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? -1)));
      await eventually(async () => /If you don't see a command prompt/.test(stderr), 30_000);
      const typing = setInterval(() => child.stdin?.write('echo via-stdin $((6*7))\n'), 500);
      child.stdin?.write('echo via-stdin $((6*7))\n');
      try {
        await waitOutput(child, /via-stdin 42/);
      } finally {
        clearInterval(typing);
      }
      t.pass('the shell answered what was typed');
      child.stdin?.end('exit\n');
      t.equal(await exited, 0, `kubectl ends with the shell (${stderr})`);
      t.notMatch(stderr, /falling back to streaming logs/, 'attached, not read from the log');
    });

    t.test(`kubectl 1.${v} port-forward`, async (t) => {
      const child = spawn(bin, [...args, 'port-forward', 'pod/web', ':8080', '--address=127.0.0.1'], { stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(child);
      const m = await waitOutput(child, /Forwarding from 127\.0\.0\.1:(\d+) -> 8080/);
      const port = Number(m[1]);
      t.equal(await fetchPage(port), 'hello through port-forward\n', 'first page');
      t.equal(await fetchPage(port), 'hello through port-forward\n', 'a second connection over the same session');
      child.kill('SIGTERM');
    });
  }
}
