/**
 * A `corectl server` with its secure defaults for the security suites, and the ways in that a
 * user of such a cluster has: the admin's kubectl, raw HTTPS requests with a bearer token, a
 * client certificate or nothing, and users made through a CertificateSigningRequest
 * (examples/csr.sh). With containerd (as root) the node runs real containers through the
 * private containerd `make up` prepares; otherwise containers are simulated. Every line of the
 * server's log that says "forbidden" is kept, for the check that no component was refused.
 * (Not a test file itself.)
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { containerdSkipReason } from '../helpers/containerd.js';
import { freePort, startServer, type Running } from '../helpers/corectl-server.js';

export interface Creds { token?: string; cert?: Buffer | string; key?: Buffer | string }
export interface Reply { status: number; body: string; json: Record<string, unknown> }

export interface SecureCluster {
  readonly dir: string;
  readonly dataDir: string;
  readonly nodeName: string;
  readonly url: string;
  readonly realContainers: boolean;
  readonly server: Running;
  /** Lines of the server log that contain "forbidden". */
  readonly forbiddenLines: string[];
  /** kubectl (the given binary) as the admin, or with another coreconfig. */
  kubectl(args: string[], opts?: { coreconfig?: string; input?: string; bin?: string }): { code: number; out: string; err: string };
  call(method: string, path: string, creds: Creds, body?: unknown, contentType?: string, headers?: Record<string, string>): Promise<Reply>;
  /** GET of another HTTPS port on 127.0.0.1 (self-signed serving certificates accepted). */
  getPort(port: number, path: string, creds: Creds): Promise<Reply>;
  /** A user made through a CSR (examples/csr.sh), approved by the admin; its own coreconfig. */
  csrUser(name: string, group?: string): Promise<{ cert: string; key: string; coreconfig: string }>;
  stop(): Promise<void>;
}

/** Starts make up's private containerd under `dir`; returns the server options for it. */
function containerdArgs(dir: string): string[] {
  const r = spawnSync(process.execPath, ['scripts/containerd-setup.mjs', 'up', dir], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, NODE_OPTIONS: '' } });
  if (r.status !== 0) throw new Error(`containerd-setup up failed: ${r.stderr}`);
  return [`--container-runtime-endpoint=${r.stdout.trim()}`, '--nodeagent-arg=--pod-infra-container-image=localhost/pause:busybox'];
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function poll<T>(what: string, fn: () => T | Promise<T>, ok: (v: T) => boolean, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms (last ${JSON.stringify(v).slice(0, 300)})`);
    await sleep(300);
  }
}

/** `simulated`: no containerd even where it could run (for suites that need no processes). */
export async function startSecureCluster(kubectlBin: string, nodeName: string, opts: { simulated?: boolean; args?: string[] } = {}): Promise<SecureCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-security-'));
  const dataDir = join(dir, 'data');
  const noContainerd = opts.simulated ? 'simulated by request' : containerdSkipReason();
  const runtimeArgs = noContainerd ? ['--container-runtime=fake'] : containerdArgs(join(dir, 'containerd'));
  const port = await freePort();
  const server = startServer([
    `--data-dir=${dataDir}`, '--bind-address=127.0.0.1', `--secure-port=${port}`, `--node-name=${nodeName}`,
    ...runtimeArgs, `--nodeagent-arg=--port=${await freePort()}`, '--nodeagent-arg=--healthz-port=0', ...(opts.args ?? []),
  ]);
  const forbiddenLines: string[] = [];
  let partial = '';
  server.child.stderr?.on('data', (d: Buffer) => {
    partial += d.toString();
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const l of lines) if (/forbidden/i.test(l)) forbiddenLines.push(l);
  });
  const stop = async (): Promise<void> => {
    await server.stop();
    if (!noContainerd) spawnSync(process.execPath, ['scripts/containerd-setup.mjs', 'down', join(dir, 'containerd')], { timeout: 120_000, env: { ...process.env, NODE_OPTIONS: '' } });
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await server.waitFor(new RegExp(`node ${nodeName} Ready`), 90_000);
  } catch (e) {
    await stop();
    throw e;
  }
  const admin = join(dataDir, 'admin.coreconfig');
  const ca = readFileSync(join(dataDir, 'pki', 'ca.crt'));
  const url = `https://127.0.0.1:${port}`;

  const kubectl: SecureCluster['kubectl'] = (args, opts = {}) => {
    const r = spawnSync(opts.bin ?? kubectlBin, args, {
      encoding: 'utf8', timeout: 60_000, cwd: dir, input: opts.input ?? '',
      env: { ...process.env, KUBECONFIG: opts.coreconfig ?? admin, HOME: dir, NODE_OPTIONS: '' },
    });
    return { code: r.status ?? -1, out: r.stdout ?? '', err: r.stderr ?? '' };
  };

  const call: SecureCluster['call'] = (method, path, creds, body, contentType = 'application/json', headers = {}) => new Promise((resolveReply, reject) => {
    const data = body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    const req = request(`${url}${path}`, {
      method, ca, agent: false,
      ...(creds.cert ? { cert: creds.cert, key: creds.key } : {}),
      headers: {
        accept: 'application/json', ...headers,
        ...(creds.token ? { authorization: `Bearer ${creds.token}` } : {}),
        ...(data ? { 'content-type': contentType, 'content-length': String(data.length) } : {}),
      },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: Record<string, unknown> = {};
        try { json = JSON.parse(text) as Record<string, unknown>; } catch { /* not JSON */ }
        resolveReply({ status: res.statusCode ?? 0, body: text, json });
      });
    });
    req.on('error', reject);
    req.end(data);
  });

  const getPort: SecureCluster['getPort'] = (p, path, creds) => new Promise((resolveReply, reject) => {
    const req = request(`https://127.0.0.1:${p}${path}`, {
      rejectUnauthorized: false, agent: false, ...(creds.cert ? { cert: creds.cert, key: creds.key } : {}),
      headers: creds.token ? { authorization: `Bearer ${creds.token}` } : {},
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolveReply({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), json: {} }));
    });
    req.on('error', reject);
    req.end();
  });

  const csrUser: SecureCluster['csrUser'] = async (name, group) => {
    const made = spawnSync('sh', [resolve('examples/csr.sh'), name, ...(group ? [group] : [])], { cwd: dir, encoding: 'utf8' });
    if (made.status !== 0) throw new Error(`csr.sh: ${made.stderr}`);
    const applied = kubectl(['apply', '-f', '-'], { input: made.stdout });
    if (applied.code !== 0) throw new Error(`apply csr: ${applied.err}`);
    const approved = kubectl(['certificate', 'approve', name]);
    if (approved.code !== 0) throw new Error(`approve: ${approved.err}`);
    const b64 = await poll(`certificate of ${name}`, () => kubectl(['get', 'csr', name, '-o', 'jsonpath={.status.certificate}']).out, (s) => s.length > 0);
    const cert = Buffer.from(b64, 'base64').toString('utf8');
    const key = readFileSync(join(dir, `${name}.key`), 'utf8');
    writeFileSync(join(dir, `${name}.crt`), cert);
    const coreconfig = join(dir, `${name}.coreconfig`);
    for (const args of [
      ['config', 'set-cluster', 'c', `--server=${url}`, `--certificate-authority=${join(dataDir, 'pki', 'ca.crt')}`, '--embed-certs'],
      ['config', 'set-credentials', name, `--client-certificate=${join(dir, `${name}.crt`)}`, `--client-key=${join(dir, `${name}.key`)}`, '--embed-certs'],
      ['config', 'set-context', 'c', '--cluster=c', `--user=${name}`],
      ['config', 'use-context', 'c'],
    ]) {
      const r = kubectl(args, { coreconfig });
      if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.err}`);
    }
    return { cert, key, coreconfig };
  };

  return { dir, dataDir, nodeName, url, realContainers: !noContainerd, server, forbiddenLines, kubectl, call, getPort, csrUser, stop };
}

/**
 * Log lines in which a component (controller manager, scheduler, node agent) was refused: the
 * proof that their roles hold what they need.
 */
export function componentForbidden(lines: readonly string[]): string[] {
  return lines.filter((l) => /"part":"(controller-manager|scheduler|nodeagent)"/.test(l) && !/exceeded quota|status unknown for quota/.test(l));
}
