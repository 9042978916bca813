/**
 * Starts an API server for tests, with a fresh PKI (one CA signing the serving certificate and
 * the client certificates), a temp data dir and a coreconfig (kubeconfig) file for kubectl that
 * authenticates as `admin` in `system:masters` with a client certificate.
 *
 * Modes:
 *  - default: the full API server in-process (`startApiserverParts`: storage + REST when present)
 *    on a free loopback port, configured from command-line style `args`;
 *  - `rest`: only the serving plumbing in-process with the given REST handler (filter/limit tests);
 *  - `process: true`: a real `corectl apiserver` child process (needs src/cli.ts compiled).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import * as http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino, type Logger } from 'pino';
import { AlwaysAllowAuthorizer } from '../../src/auth/always-allow.js';
import { parseApiserverArgs } from '../../src/flags/apiserver.js';
import type { RestHandler } from '../../src/daemons/apiserver/chain.js';
import { run, startApiserverParts, type ApiserverParts } from '../../src/daemons/apiserver/main.js';
import { startServing, type Serving } from '../../src/daemons/apiserver/serve.js';
import { withServingDefaults, type ServingOptions } from '../../src/daemons/apiserver/serving-options.js';
import { createCA, issueCert, writePemFile, type CertificateAuthority } from '../../src/util/pki.js';
import { freePort } from '../../src/util/free-port.js';
export { freePort };

/** Serving-only mode's default authorization mode (see StartApiserverOptions.serving). */
const TEST_ALLOW_ALL = 'TestAllowAll';

export interface StartApiserverOptions {
  /**
   * Extra command-line options (full and process modes), e.g. ['--authorization-mode=AlwaysDeny'].
   * Unless one of them names admission plugins, --disable-admission-plugins=ServiceAccount,
   * StorageObjectInUseProtection is added.
   */
  args?: string[];
  /** Serving-only mode with this REST handler (and `serving` overrides). */
  rest?: RestHandler;
  /** Serving-only mode without any REST handler. */
  servingOnly?: boolean;
  /**
   * Overrides for serving-only mode. Without an authorizationMode, requests are authorized by
   * an allow-all mode that is not named AlwaysAllow, so anonymous requests stay on (AlwaysAllow
   * turns them off, as in Kubernetes): serving tests need no credentials.
   */
  serving?: Partial<ServingOptions>;
  /** Run `corectl apiserver` as a child process. */
  process?: boolean;
  /** Write the client CA as --client-ca-file (default true). */
  clientCa?: boolean;
  log?: Logger;
}

export interface StartedApiserver {
  url: string;
  port: number;
  dir: string;
  coreconfigPath: string;
  caFile: string;
  caKeyFile: string;
  clientCertFile: string;
  clientKeyFile: string;
  ca: CertificateAuthority;
  /** Issues another client certificate signed by the cluster CA. */
  issueClient(commonName: string, organizations?: string[]): Promise<{ certPem: string; keyPem: string }>;
  parts?: ApiserverParts;
  serving?: Serving;
  child?: ChildProcess;
  stop(): Promise<void>;
}


function coreconfig(url: string, caPem: string, certPem: string, keyPem: string): string {
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  return [
    'apiVersion: v1', 'kind: Config', 'current-context: test',
    'clusters:', '- name: test', '  cluster:', `    server: ${url}`, `    certificate-authority-data: ${b64(caPem)}`,
    'users:', '- name: admin', '  user:', `    client-certificate-data: ${b64(certPem)}`, `    client-key-data: ${b64(keyPem)}`,
    'contexts:', '- name: test', '  context:', '    cluster: test', '    user: admin', '',
  ].join('\n');
}

/** GET over HTTP/2 with a deadline; resolves the status code or rejects. */
async function probe(url: string, caPem: string, path: string, client?: { cert: string; key: string }): Promise<number> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url, { ca: caPem, ...(client ?? {}) });
    session.on('error', reject);
    const req = session.request({ ':path': path });
    req.setTimeout(2000, () => { req.close(); reject(new Error('probe timeout')); });
    req.on('response', (h) => { resolve(Number(h[':status'])); session.close(); });
    req.on('error', reject);
    req.resume();
    req.end();
  });
}

async function waitHealthy(url: string, caPem: string, child: ChildProcess, client?: { cert: string; key: string }, deadlineMs = 20_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  let wait = 50;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`apiserver exited with code ${child.exitCode}`);
    try {
      if (await probe(url, caPem, '/healthz', client) === 200) return;
    } catch { /* not up yet */ }
    if (Date.now() > end) throw new Error('apiserver did not become healthy in time');
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, 500);
  }
}

async function waitPassing(parts: ApiserverParts, endpoint: 'healthz' | 'readyz', deadlineMs = 20_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!await parts.serving.health.passing(endpoint)) {
    if (Date.now() > end) throw new Error(`apiserver did not pass /${endpoint} in time`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function startApiserver(opts: StartApiserverOptions = {}): Promise<StartedApiserver> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-apiserver-'));
  const log = opts.log ?? pino({ level: 'silent' });
  try {
    const ca = await createCA({ commonName: 'corectl-test-ca' });
    const servingPair = await issueCert({ ca, commonName: 'apiserver', dnsNames: ['localhost', 'kubernetes'], ips: ['127.0.0.1'], usages: 'server' });
    const admin = await issueCert({ ca, commonName: 'admin', organizations: ['system:masters'], usages: 'client' });
    const f = {
      caFile: join(dir, 'ca.crt'), caKeyFile: join(dir, 'ca.key'),
      certFile: join(dir, 'apiserver.crt'), keyFile: join(dir, 'apiserver.key'),
      clientCertFile: join(dir, 'admin.crt'), clientKeyFile: join(dir, 'admin.key'),
      coreconfigPath: join(dir, 'coreconfig'),
    };
    await Promise.all([
      writePemFile(f.caFile, ca.certPem), writePemFile(f.caKeyFile, ca.keyPem),
      writePemFile(f.certFile, servingPair.certPem), writePemFile(f.keyFile, servingPair.keyPem),
      writePemFile(f.clientCertFile, admin.certPem), writePemFile(f.clientKeyFile, admin.keyPem),
    ]);
    const clientCa = opts.clientCa !== false;
    const base = {
      dir, caFile: f.caFile, caKeyFile: f.caKeyFile, clientCertFile: f.clientCertFile, clientKeyFile: f.clientKeyFile,
      coreconfigPath: f.coreconfigPath, ca,
      issueClient: (cn: string, orgs: string[] = []) => issueCert({ ca, commonName: cn, organizations: orgs, usages: 'client' }),
    };
    const finish = async (url: string, port: number, stopInner: () => Promise<void>, extra: Partial<StartedApiserver>): Promise<StartedApiserver> => {
      await writeFile(f.coreconfigPath, coreconfig(url, ca.certPem, admin.certPem, admin.keyPem), { mode: 0o600 });
      return {
        ...base, ...extra, url, port,
        async stop(): Promise<void> {
          try { await stopInner(); } finally { await rm(dir, { recursive: true, force: true }); }
        },
      };
    };

    if (opts.rest || opts.servingOnly) {
      const options = withServingDefaults({
        bindAddress: '127.0.0.1', certDir: join(dir, 'certs'), tlsCertFile: f.certFile, tlsPrivateKeyFile: f.keyFile,
        ...(clientCa ? { clientCaFile: f.caFile } : {}),
        authorizationMode: [TEST_ALLOW_ALL],
        ...opts.serving,
      });
      const serving = await startServing({
        options, log, portOverride: 0, ...(opts.rest ? { rest: opts.rest } : {}),
        extraAuthorizationModes: { [TEST_ALLOW_ALL]: new AlwaysAllowAuthorizer() },
      });
      const server = serving.server;
      if (!server) throw new Error('no listener');
      return finish(server.url, server.port, () => serving.stop(500), { serving });
    }

    const common = [
      '--bind-address=127.0.0.1', `--tls-cert-file=${f.certFile}`, `--tls-private-key-file=${f.keyFile}`,
      `--data-dir=${join(dir, 'data')}`, `--cert-dir=${join(dir, 'certs')}`,
      ...(clientCa ? [`--client-ca-file=${f.caFile}`] : []),
      // As Kubernetes' own integration tests: without a controller manager no `default` service
      // account appears and no protection finalizer is ever removed, so these two plugins are
      // off unless a test names the plugins itself.
      ...((opts.args ?? []).some((a) => a.includes('admission-plugins')) ? [] : ['--disable-admission-plugins=ServiceAccount,StorageObjectInUseProtection']),
    ];
    if (opts.process) {
      const port = await freePort();
      const cli = fileURLToPath(new URL('../../src/cli.js', import.meta.url));
      const child = spawn(process.execPath, [
        '--input-type=module', '-e',
        `const m = await import(${JSON.stringify('file://' + cli)}); process.exitCode = await m.main(process.argv);`,
        'corectl', 'apiserver', `--secure-port=${port}`, ...common, ...(opts.args ?? []),
      ], { stdio: ['ignore', 'ignore', 'pipe'] });
      const closed = new Promise<void>((r) => child.once('close', () => r()));
      let stderr = '';
      child.stderr?.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-4000); });
      const url = `https://127.0.0.1:${port}`;
      try {
        // With a client certificate: anonymous requests are off under AlwaysAllow (issue 27).
        await waitHealthy(url, ca.certPem, child, clientCa ? { cert: admin.certPem, key: admin.keyPem } : undefined);
      } catch (e) {
        // Let stderr drain (the 'close' event follows the last output) before reporting it.
        child.kill('SIGKILL');
        await Promise.race([closed, new Promise((r) => setTimeout(r, 2000))]);
        throw new Error(`${(e as Error).message}\n${stderr}`);
      }
      const stopChild = async (): Promise<void> => {
        if (child.exitCode !== null) return;
        const exited = new Promise<void>((r) => child.once('exit', () => r()));
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(t);
      };
      return finish(url, port, stopChild, { child });
    }

    const { config } = parseApiserverArgs(['--secure-port=6443', ...common, ...(opts.args ?? [])]);
    const parts = await startApiserverParts(config, log, 0);
    const server = parts.serving.server;
    if (!server) { await parts.shutdown(); throw new Error('no listener'); }
    // As in process mode: healthy first (post-start work such as the RBAC bootstrap policy done).
    await waitPassing(parts, 'healthz').catch(async (e: unknown) => { await parts.shutdown(); throw e; });
    return finish(server.url, server.port, () => parts.shutdown(), { parts, serving: parts.serving });
  } catch (e) {
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
}

export interface TestRequest {
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  servername?: string;
  /** Give up after this many ms (default 10 s). */
  timeoutMs?: number;
}

export interface TestResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** 'h2' or 'http/1.1'. */
  protocol: string;
}

/** One request over HTTP/2 (a fresh session each time). */
export async function h2request(url: string, r: TestRequest): Promise<TestResponse> {
  return new Promise((resolve, reject) => {
    const tls: http2.SecureClientSessionOptions = {};
    if (r.ca) tls.ca = r.ca;
    if (r.cert) tls.cert = r.cert;
    if (r.key) tls.key = r.key;
    if (r.servername) tls.servername = r.servername;
    const session = http2.connect(url, tls);
    session.on('error', reject);
    const req = session.request({ ':path': r.path, ':method': r.method ?? 'GET', ...(r.headers ?? {}) });
    const timer = setTimeout(() => { session.destroy(); reject(new Error(`request ${r.path} timed out`)); }, r.timeoutMs ?? 10_000);
    let status = 0;
    let headers: TestResponse['headers'] = {};
    const chunks: Buffer[] = [];
    req.on('response', (h) => { status = Number(h[':status']); headers = h as TestResponse['headers']; });
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => { clearTimeout(timer); session.close(); resolve({ status, headers, body: Buffer.concat(chunks).toString(), protocol: 'h2' }); });
    req.on('error', (e) => { clearTimeout(timer); session.destroy(); reject(e); });
    req.end(r.body);
  });
}

/** One request over HTTP/1.1 (TLS, no keep-alive). */
export async function h1request(url: string, r: TestRequest): Promise<TestResponse> {
  const https = await import('node:https');
  return new Promise((resolve, reject) => {
    const u = new URL(r.path, url);
    const req = https.request(u, {
      method: r.method ?? 'GET', headers: r.headers ?? {}, agent: false,
      ...(r.ca ? { ca: r.ca } : {}), ...(r.cert ? { cert: r.cert } : {}), ...(r.key ? { key: r.key } : {}),
      ...(r.servername ? { servername: r.servername } : {}),
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString(), protocol: `http/${res.httpVersion}` }));
      res.on('error', reject);
    });
    req.setTimeout(r.timeoutMs ?? 10_000, () => req.destroy(new Error(`request ${r.path} timed out`)));
    req.on('error', reject);
    req.end(r.body);
  });
}

/**
 * Runs `corectl apiserver` in-process with these arguments when it is expected to refuse to
 * start: its exit code and what it wrote to stderr (captured, not shown).
 */
export async function runExpectingStartFailure(args: readonly string[], log: Logger = pino({ level: 'silent' })): Promise<{ code: number; stderr: string }> {
  const { config } = parseApiserverArgs(args);
  const write = process.stderr.write.bind(process.stderr);
  let stderr = '';
  process.stderr.write = ((chunk: string | Uint8Array) => { stderr += String(chunk); return true; }) as typeof process.stderr.write;
  try {
    const code = await run(config, { log, signal: new AbortController().signal });
    return { code, stderr };
  } finally {
    process.stderr.write = write;
  }
}
