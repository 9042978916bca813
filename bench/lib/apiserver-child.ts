/**
 * What the API server benches share: the node arguments that start a `corectl apiserver` child
 * (LevelDB in `dir`, the bench PKI, client-certificate auth) and the request bodies they send.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ClientHttp2Session } from 'node:http2';
import type { BenchPki } from './children.js';
import { send } from './h2-load.js';

/**
 * The Node flags the corectl launcher runs daemons with (its `#!/usr/bin/env -S node ...` line),
 * so a bench child runs the way `corectl apiserver` does.
 */
export function launcherNodeFlags(): string[] {
  const launcher = fileURLToPath(new URL('../../../bin/corectl', import.meta.url));
  const first = readFileSync(launcher, 'utf8').split('\n', 1)[0] ?? '';
  const m = /^#!\S*env(?: -S)? node(.*)$/.exec(first);
  if (!m) throw new Error(`${launcher}: unexpected first line ${JSON.stringify(first)}`);
  return m[1]!.trim().split(/\s+/).filter(Boolean);
}

/**
 * Node arguments running `cli` (a compiled src/cli.js) as `corectl apiserver` on `port`: the
 * launcher's Node flags first, then `nodeArgs`.
 */
export function apiserverArgs(cli: string, dir: string, pki: BenchPki, port: number, nodeArgs: readonly string[] = []): string[] {
  return [
    ...launcherNodeFlags(), ...nodeArgs, '--input-type=module', '-e',
    `const m = await import(${JSON.stringify('file://' + cli)}); process.exitCode = await m.main(process.argv);`,
    'corectl', 'apiserver', `--secure-port=${port}`, '--bind-address=127.0.0.1',
    `--data-dir=${join(dir, 'data')}`, `--cert-dir=${join(dir, 'certs')}`,
    `--tls-cert-file=${pki.certFile}`, `--tls-private-key-file=${pki.keyFile}`, `--client-ca-file=${pki.caFile}`,
  ];
}

/** A ConfigMap of about `size` bytes of JSON. */
export function configMapBody(name: string, ns: string, data: Record<string, string>, resourceVersion?: string, size = 1024): string {
  const o = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, ...(resourceVersion ? { resourceVersion } : {}) }, data: { ...data, pad: '' } };
  o.data.pad = 'x'.repeat(Math.max(0, size - JSON.stringify(o).length));
  return JSON.stringify(o);
}

/**
 * The same ConfigMap with metadata.generateName `prefix` instead of a name: one body the server
 * names anew on every POST (for load generators that send one fixed body, such as h2load).
 */
export function configMapGenerateBody(prefix: string, ns: string, size = 1024): string {
  const o = JSON.parse(configMapBody('', ns, {}, undefined, size)) as { metadata: Record<string, string> };
  delete o.metadata['name'];
  o.metadata['generateName'] = prefix;
  return JSON.stringify(o);
}

/** A small pod in namespace `bench`. */
export function podBody(name: string): string {
  return JSON.stringify({
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'bench', labels: { app: 'bench' } },
    spec: { containers: [{ name: 'c', image: 'busybox', command: ['sleep', '3600'] }], automountServiceAccountToken: false },
  });
}

/**
 * Creates namespace `ns` and its `default` ServiceAccount, as a cluster's service account
 * controller would (a bench API server runs without a controller manager, and the
 * ServiceAccount admission plugin refuses pods whose account does not exist).
 */
export async function createBenchNamespace(session: ClientHttp2Session, ns: string): Promise<void> {
  const json = { 'content-type': 'application/json', accept: 'application/json' };
  const steps = [
    { path: '/api/v1/namespaces', body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } },
    { path: `/api/v1/namespaces/${ns}/serviceaccounts`, body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: ns } } },
  ];
  for (const s of steps) {
    const res = await send(session, { path: s.path, method: 'POST', headers: json, body: JSON.stringify(s.body) });
    if (res.status !== 201) throw new Error(`${s.path} (${ns}): HTTP ${res.status} ${res.body.toString().slice(0, 300)}`);
  }
}
