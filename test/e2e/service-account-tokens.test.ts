// Service-account tokens end to end on `corectl server` (a real process, fake runtime):
// `kubectl create token default` gives a token that `kubectl auth whoami` and the node agent
// (TokenReview webhook) accept, and a pod's projected service-account token volume is written
// on the node and authenticates as well.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubectl } from '../helpers/kubectl.js';
import { freePort, startServer } from '../helpers/corectl-server.js';

const bin = kubectl(33) ?? kubectl(30);

t.test('service-account tokens on corectl server', { skip: bin ? false : 'kubectl.1.30+ not installed', timeout: 180_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-satokens-'));
  const dataDir = join(dir, 'data');
  const apiPort = await freePort();
  const agentPort = await freePort();
  const server = startServer([
    `--data-dir=${dataDir}`, '--bind-address=127.0.0.1', `--secure-port=${apiPort}`, '--node-name=sa-node',
    '--container-runtime=fake', `--nodeagent-arg=--port=${agentPort}`, '--nodeagent-arg=--healthz-port=0',
  ]);
  t.teardown(async () => { await server.stop(); await rm(dir, { recursive: true, force: true }); });
  await server.waitFor(/node sa-node Ready/, 60_000);
  const cache = join(dir, 'kube-cache');
  const run = (config: string, ...args: string[]): { status: number | null; stdout: string; stderr: string } => {
    const r = spawnSync(bin!, ['--kubeconfig', config, '--cache-dir', cache, ...args], { encoding: 'utf8', timeout: 60_000 });
    return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
  };
  const admin = join(dataDir, 'admin.coreconfig');
  const k = (...args: string[]): string => {
    const r = run(admin, ...args);
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
    return r.stdout;
  };
  const poll = async <T>(what: string, fn: () => T | undefined | Promise<T | undefined>): Promise<T> => {
    for (let i = 0, wait = 100; i < 80; i++, wait = Math.min(wait * 2, 1000)) {
      const v = await fn();
      if (v !== undefined) return v;
      await new Promise((r) => setTimeout(r, wait));
    }
    throw new Error(`timed out waiting for ${what}`);
  };

  // The service-account controller creates "default" in every namespace.
  await poll('default service account', () => (run(admin, 'get', 'serviceaccount', 'default').status === 0 ? true : undefined));
  const token = k('create', 'token', 'default').trim();
  t.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'a JWT');

  const ca = await readFile(join(dataDir, 'pki', 'ca.crt'));
  const tokenConfig = join(dir, 'token.coreconfig');
  const writeTokenConfig = (tok: string): Promise<void> => writeFile(tokenConfig, [
    'apiVersion: v1', 'kind: Config', 'current-context: sa',
    'clusters:', '- name: c', '  cluster:', `    server: https://127.0.0.1:${apiPort}`, `    certificate-authority-data: ${ca.toString('base64')}`,
    'users:', '- name: sa', '  user:', `    token: ${tok}`,
    'contexts:', '- name: sa', '  context:', '    cluster: c', '    user: sa', '',
  ].join('\n'));
  await writeTokenConfig(token);
  const who = run(tokenConfig, 'auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}');
  t.equal(who.stdout, 'system:serviceaccount:default:default', `whoami with the token ${who.stderr}`);

  const agentGet = (path: string, tok: string): Promise<number> => new Promise((resolve, reject) => {
    const req = request(`https://127.0.0.1:${agentPort}${path}`, { agent: new Agent({ ca }), headers: { authorization: `Bearer ${tok}` } }, (res) => { res.resume(); resolve(res.statusCode ?? 0); });
    req.on('error', reject);
    req.end();
  });
  // Under Node,RBAC the token authenticates (TokenReview) but the account may not use the node
  // (SubjectAccessReview: nodes/proxy) until it is granted, as on Kubernetes.
  t.equal(await agentGet('/pods', token), 403, 'the node agent accepts the token (TokenReview); RBAC refuses it (SubjectAccessReview)');
  k('create', 'clusterrolebinding', 'sa-node-proxy', '--clusterrole=system:kubelet-api-admin', '--serviceaccount=default:default');
  t.equal(await poll('the grant', async () => { const s = await agentGet('/pods', token); return s === 200 ? s : undefined; }), 200, 'once granted, the API server allows it');
  t.equal(await agentGet('/pods', 'bogus'), 401, 'a bad token is refused by the node agent');

  // A pod with a projected token volume: the file on the node holds a token bound to the pod.
  const manifest = join(dir, 'pod.json');
  await writeFile(manifest, JSON.stringify({
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'tokened' },
    spec: {
      containers: [{ name: 'c', image: 'localhost/busybox:static', command: ['sleep', '3600'], volumeMounts: [{ name: 'sa', mountPath: '/var/run/secrets/tokens' }] }],
      volumes: [{ name: 'sa', projected: { sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 3600 } }] } }],
    },
  }));
  k('apply', '-f', manifest);
  const uid = await poll('pod Running', () => {
    const p = JSON.parse(k('get', 'pod', 'tokened', '-o', 'json')) as { metadata: { uid: string }; status: { phase?: string } };
    return p.status.phase === 'Running' ? p.metadata.uid : undefined;
  });
  const podsDir = join(dataDir, 'nodeagent', 'pods', uid, 'volumes', 'kubernetes.io~projected', 'sa');
  t.same((await readdir(podsDir)).filter((n) => !n.startsWith('..')), ['token'], 'the token (beside the atomic writer\'s hidden ..data)');
  const projected = (await readFile(join(podsDir, 'token'), 'utf8')).trim();
  const claims = JSON.parse(Buffer.from(projected.split('.')[1] ?? '', 'base64url').toString()) as Record<string, { pod?: { name: string } }>;
  t.equal(claims['kubernetes.io']?.pod?.name, 'tokened', 'bound to the pod');
  await writeTokenConfig(projected);
  t.equal(run(tokenConfig, 'auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}').stdout, 'system:serviceaccount:default:default');
});
