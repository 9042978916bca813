/**
 * An HA control plane for tests, `make up-ha` and the HA bench: a three-member etcd cluster
 * (etcd-cluster.ts), several `corectl apiserver` processes on it sharing one PKI (one CA, one
 * serving certificate for 127.0.0.1, an admin client certificate), each on its own fixed
 * loopback port so it can be killed and started again on the same address, and optionally
 * haproxy in front (TCP, TLS passed through) for kubectl, which reads one server only.
 *
 * With machines (network namespaces, as `make up-ha` makes them), etcd member i and API server
 * i run inside machine i's namespace on its own address, on the usual ports (2379/2380, 6443),
 * as on real machines; haproxy then listens on haproxyIp:6443 (the host's address on their network).
 *
 * Coreconfigs written: `coreconfig` lists every API server (comma-separated `server`: corectl's
 * components fail over between them), `coreconfig-<i>` names server i alone, and
 * `coreconfig-haproxy` the haproxy frontend (for kubectl).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import * as http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCA, issueCert, writePemFile, type CertKeyPem } from '../../src/util/pki.js';
import { freePort } from '../../src/util/free-port.js';
import { startEtcdCluster, type EtcdCluster, type EtcdHost } from './etcd-cluster.js';

export const CLI = fileURLToPath(new URL('../../src/cli.js', import.meta.url));

export interface HaApiserver {
  readonly index: number;
  readonly url: string;
  readonly port: number;
  /** The address it publishes in the kubernetes endpoints (not bound: a name for the lease). */
  readonly advertise: string;
  child: ChildProcess | undefined;
}

export interface HaCluster {
  readonly dir: string;
  readonly etcd: EtcdCluster;
  readonly apiservers: readonly HaApiserver[];
  readonly caPem: string;
  readonly admin: CertKeyPem;
  /** Every API server, comma-separated: for corectl's components. */
  readonly coreconfigPath: string;
  coreconfigFor(i: number): string;
  /** Writes (once) and returns a coreconfig listing the servers in this order (another "machine"'s preference). */
  coreconfigOrdered(order: readonly number[]): Promise<string>;
  /** haproxy's frontend (undefined without haproxy). */
  readonly haproxyUrl: string | undefined;
  /** haproxy's process id (undefined without haproxy). */
  readonly haproxyPid: number | undefined;
  readonly haproxyCoreconfigPath: string | undefined;
  /** A client certificate for another user, signed by the cluster CA. */
  issueClient(commonName: string, organizations?: string[]): Promise<CertKeyPem>;
  kill(i: number, signal?: NodeJS.Signals): Promise<void>;
  restart(i: number): Promise<void>;
  /** GET path on server i with the admin certificate: status and body. */
  get(i: number, path: string, timeoutMs?: number): Promise<{ status: number; body: string }>;
  stop(): Promise<void>;
}

export interface HaClusterOptions {
  apiservers?: number;
  /** Extra apiserver options. */
  args?: string[];
  haproxy?: boolean;
  /** Where processes write their logs: a directory (kept), or nowhere. */
  logDir?: string;
  dir?: string;
  /** The etcd client URLs API server i uses (default every member's): e.g. relays that can be cut. */
  kvstoreFor?: (i: number, endpoints: readonly string[]) => Promise<readonly string[]>;
  /** Machine i (address, argv prefix entering its namespace) runs etcd member i and API server i. */
  machines?: readonly EtcdHost[];
  /** With machines: the host's address haproxy listens on (port 6443). */
  haproxyIp?: string;
}

/** Processes started here and not stopped yet: killed when the test process exits without stopping them. */
const live = new Set<ChildProcess>();
let exitHooked = false;
export function track(child: ChildProcess): ChildProcess {
  live.add(child);
  child.once('exit', () => live.delete(child));
  if (!exitHooked) {
    exitHooked = true;
    process.once('exit', () => { for (const c of live) c.kill('SIGKILL'); });
  }
  return child;
}

export function haproxyAvailable(): boolean {
  return spawnSync('haproxy', ['-v'], { stdio: 'ignore', timeout: 10_000 }).status === 0;
}

function coreconfigText(server: string, caPem: string, admin: CertKeyPem): string {
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  return [
    'apiVersion: v1', 'kind: Config', 'current-context: ha',
    'clusters:', '- name: ha', '  cluster:', `    server: ${server}`, `    certificate-authority-data: ${b64(caPem)}`,
    'users:', '- name: admin', '  user:', `    client-certificate-data: ${b64(admin.certPem)}`, `    client-key-data: ${b64(admin.keyPem)}`,
    'contexts:', '- name: ha', '  context:', '    cluster: ha', '    user: admin', '',
  ].join('\n');
}

export function h2get(url: string, path: string, caPem: string, client: CertKeyPem, timeoutMs = 5000): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url, { ca: caPem, cert: client.certPem, key: client.keyPem });
    const timer = setTimeout(() => { session.destroy(); reject(new Error(`GET ${path} timed out`)); }, timeoutMs);
    session.on('error', (e) => { clearTimeout(timer); reject(e); });
    const req = session.request({ ':path': path });
    let status = 0, body = '';
    req.on('response', (h) => { status = Number(h[':status']); });
    req.setEncoding('utf8');
    req.on('data', (c: string) => { body += c; });
    req.on('end', () => { clearTimeout(timer); session.close(); resolve({ status, body }); });
    req.on('error', (e) => { clearTimeout(timer); session.destroy(); reject(e); });
    req.end();
  });
}

export async function startHaCluster(o: HaClusterOptions = {}): Promise<HaCluster> {
  const dir = o.dir ?? await mkdtemp(join(tmpdir(), 'corectl-ha-'));
  const { openSync } = await import('node:fs');
  const logTo = (name: string): 'ignore' | number => (o.logDir ? openSync(join(o.logDir, `${name}.log`), 'a') : 'ignore');
  const machines = o.machines;
  const etcd = await startEtcdCluster(3, { dir: join(dir, 'etcd'), logTo, ...(machines ? { hosts: machines } : {}) });
  const ca = await createCA({ commonName: 'corectl-ha-ca' });
  const serving = await issueCert({ ca, commonName: 'apiserver', dnsNames: ['localhost', 'kubernetes', 'kubernetes.default'], ips: ['127.0.0.1', ...(machines ?? []).map((m) => m.ip), ...(o.haproxyIp ? [o.haproxyIp] : [])], usages: 'server' });
  const admin = await issueCert({ ca, commonName: 'admin', organizations: ['system:masters'], usages: 'client' });
  // The serving key also signs and verifies service-account tokens (the default): one key for
  // every server, so a token one issues, all accept.
  const f = { ca: join(dir, 'ca.crt'), caKey: join(dir, 'ca.key'), cert: join(dir, 'apiserver.crt'), key: join(dir, 'apiserver.key') };
  await Promise.all([writePemFile(f.ca, ca.certPem), writePemFile(f.caKey, ca.keyPem), writePemFile(f.cert, serving.certPem), writePemFile(f.key, serving.keyPem)]);

  const n = o.apiservers ?? 3;
  const apiservers: HaApiserver[] = [];
  for (let i = 0; i < n; i++) {
    const m = machines?.[i];
    const port = m ? 6443 : await freePort();
    apiservers.push({ index: i, url: `https://${m?.ip ?? '127.0.0.1'}:${port}`, port, advertise: m?.ip ?? `10.250.0.${i + 1}`, child: undefined });
  }
  const running = (c: ChildProcess | undefined): c is ChildProcess => !!c && c.exitCode === null && c.signalCode === null;
  const kvstore: string[][] = [];
  for (let i = 0; i < n; i++) kvstore.push([...(o.kvstoreFor ? await o.kvstoreFor(i, etcd.endpoints) : etcd.endpoints)]);
  const spawnApiserver = (a: HaApiserver): void => {
    const out = logTo(`apiserver${a.index}`);
    const exec = machines?.[a.index]?.exec ?? [];
    a.child = track(spawn(exec[0] ?? process.execPath, [...exec.slice(1), ...(exec.length ? [process.execPath] : []),
      // HA_APISERVER_NODE_ARGS: extra Node options for the API servers (e.g. --cpu-prof, for profiling).
      ...(process.env['HA_APISERVER_NODE_ARGS']?.split(' ').filter(Boolean) ?? []),
      '--input-type=module', '-e', `const m = await import(${JSON.stringify('file://' + CLI)}); process.exitCode = await m.main(process.argv);`,
      'corectl', 'apiserver', `--secure-port=${a.port}`, `--bind-address=${machines?.[a.index]?.ip ?? '127.0.0.1'}`, `--advertise-address=${a.advertise}`,
      `--tls-cert-file=${f.cert}`, `--tls-private-key-file=${f.key}`, `--client-ca-file=${f.ca}`,
      // RBAC: anonymous /readyz (haproxy's check) is allowed, as in Kubernetes.
      '--authorization-mode=Node,RBAC',
      `--kvstore-servers=${kvstore[a.index]!.join(',')}`, `--data-dir=${join(dir, `apiserver${a.index}`)}`, `--cert-dir=${join(dir, `certs${a.index}`)}`,
      '--endpoint-reconciler-type=lease', `--apiserver-count=${n}`,
      '--disable-admission-plugins=ServiceAccount,StorageObjectInUseProtection',
      ...(o.args ?? []),
    ], { stdio: ['ignore', out, out], env: { ...process.env, NODE_OPTIONS: '' } }));
  };

  const get = (i: number, path: string, timeoutMs = 5000): Promise<{ status: number; body: string }> => h2get(apiservers[i]!.url, path, ca.certPem, admin, timeoutMs);
  const waitReady = async (i: number, timeoutMs = 90_000): Promise<void> => {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const a = apiservers[i]!;
      const c: ChildProcess | undefined = a.child;
      if (c && (c.exitCode !== null || c.signalCode !== null)) throw new Error(`apiserver ${i} exited (${c.signalCode ?? c.exitCode})`);
      try { if ((await get(i, '/readyz', 3000)).status === 200) return; } catch { /* not yet */ }
      if (Date.now() > end) throw new Error(`apiserver ${i} not ready in time`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };

  const coreconfigPath = join(dir, 'coreconfig');
  await writeFile(coreconfigPath, coreconfigText(apiservers.map((a) => a.url).join(','), ca.certPem, admin), { mode: 0o600 });
  for (const a of apiservers) await writeFile(join(dir, `coreconfig-${a.index}`), coreconfigText(a.url, ca.certPem, admin), { mode: 0o600 });

  let haproxy: ChildProcess | undefined;
  let haproxyUrl: string | undefined, haproxyCoreconfigPath: string | undefined;
  const stopAll = async (): Promise<void> => {
    haproxy?.kill('SIGKILL');
    for (const a of apiservers) if (running(a.child)) { const c = a.child; const exited = new Promise((r) => c.once('exit', r)); c.kill('SIGKILL'); await exited; }
    await etcd.stop();
    if (!o.dir) await rm(dir, { recursive: true, force: true });
  };
  try {
    // The first server creates what every server would (namespaces, RBAC policy) before the
    // others start; then the rest start together.
    spawnApiserver(apiservers[0]!);
    await waitReady(0);
    for (const a of apiservers.slice(1)) spawnApiserver(a);
    for (const a of apiservers.slice(1)) await waitReady(a.index);
    if (o.haproxy && haproxyAvailable()) {
      const bindIp = machines && o.haproxyIp ? o.haproxyIp : '127.0.0.1';
      const port = bindIp === '127.0.0.1' ? await freePort() : 6443;
      const cfg = join(dir, 'haproxy.cfg');
      await writeFile(cfg, haproxyConfig(port, apiservers, bindIp));
      haproxy = track(spawn('haproxy', ['-db', '-f', cfg], { stdio: ['ignore', logTo('haproxy'), logTo('haproxy')] }));
      haproxyUrl = `https://${bindIp}:${port}`;
      haproxyCoreconfigPath = join(dir, 'coreconfig-haproxy');
      await writeFile(haproxyCoreconfigPath, coreconfigText(haproxyUrl, ca.certPem, admin), { mode: 0o600 });
      const end = Date.now() + 20_000;
      for (;;) {
        try { if ((await h2get(haproxyUrl, '/readyz', ca.certPem, admin, 3000)).status === 200) break; } catch { /* not yet */ }
        if (Date.now() > end) throw new Error('haproxy did not pass requests in time');
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  } catch (e) {
    await stopAll();
    throw e;
  }

  return {
    dir, etcd, apiservers, caPem: ca.certPem, admin, coreconfigPath, haproxyUrl, haproxyCoreconfigPath, haproxyPid: haproxy?.pid,
    coreconfigFor: (i) => join(dir, `coreconfig-${i}`),
    issueClient: (cn, orgs = []) => issueCert({ ca, commonName: cn, organizations: orgs, usages: 'client' }),
    async coreconfigOrdered(order) {
      const path = join(dir, `coreconfig-order-${order.join('')}`);
      await writeFile(path, coreconfigText(order.map((i) => apiservers[i]!.url).join(','), ca.certPem, admin), { mode: 0o600 });
      return path;
    },
    async kill(i, signal = 'SIGKILL') {
      const a = apiservers[i]!;
      if (!a.child) return;
      const exited = !running(a.child) ? Promise.resolve() : new Promise<void>((r) => a.child!.once('exit', () => r()));
      a.child.kill(signal);
      await exited;
      a.child = undefined;
    },
    async restart(i) {
      spawnApiserver(apiservers[i]!);
      await waitReady(i);
    },
    get,
    stop: stopAll,
  };
}

/**
 * haproxy in TCP mode in front of the API servers: TLS goes through untouched (clients see the
 * servers' certificate and present their own), a server is taken out when /readyz fails
 * (checked over TLS every second) and put back when it passes.
 */
export function haproxyConfig(port: number, apiservers: readonly { url: string; port: number; index: number }[], bindIp = '127.0.0.1'): string {
  return [
    'global', '  maxconn 2000', '',
    // A connection refused by a dead server is sent to another one (redispatch).
    'defaults', '  mode tcp', '  option redispatch', '  retries 3', '  timeout connect 3s', '  timeout client 1h', '  timeout server 1h', '  timeout check 2s', '',
    'frontend apiserver', `  bind ${bindIp}:${port}`, '  default_backend apiservers', '',
    'backend apiservers', '  balance roundrobin', '  option httpchk GET /readyz', '  http-check expect status 200',
    '  default-server inter 1s fall 2 rise 1 check-ssl verify none',
    ...apiservers.map((a) => `  server apiserver${a.index} ${new URL(a.url).host} check`), '',
  ].join('\n');
}
