// Real kubectl 1.33 against a full API server with audit on: its actions (create, get, label,
// delete, a refused get as another user) appear in the log with the right user, verb,
// objectRef, code, kubectl's user agent and the authorization decision.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startApiserver } from '../helpers/apiserver.js';
import { kubectl } from '../helpers/kubectl.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;
const k133 = kubectl(33);

t.test('kubectl 1.33 actions in the audit log', { skip: k133 ? false : 'kubectl.1.33 not installed' }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'audit-kubectl-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'policy.yaml'), [
    'apiVersion: audit.k8s.io/v1', 'kind: Policy', 'omitStages: [RequestReceived]', 'rules:',
    '- level: None', '  users: ["system:apiserver"]',
    '- level: None', '  nonResourceURLs: ["/api", "/apis", "/apis/*", "/openapi/*", "/version"]',
    '- level: Metadata', '',
  ].join('\n'));
  await writeFile(join(dir, 'tokens.csv'), 'tok-carol-123456,carol,u-carol,viewers\n');
  const logFile = join(dir, 'audit.log');
  const s = await startApiserver({
    args: [`--audit-policy-file=${join(dir, 'policy.yaml')}`, `--audit-log-path=${logFile}`, `--token-auth-file=${join(dir, 'tokens.csv')}`, '--authorization-mode=RBAC'],
  });
  t.teardown(() => s.stop());
  const carolConfig = join(dir, 'carol.yaml');
  await writeFile(carolConfig, [
    'apiVersion: v1', 'kind: Config', 'current-context: carol',
    'clusters:', '- name: c', '  cluster:', `    server: ${s.url}`, `    certificate-authority: ${s.caFile}`,
    'users:', '- name: carol', '  user:', '    token: tok-carol-123456',
    'contexts:', '- name: carol', '  context:', '    cluster: c', '    user: carol', '',
  ].join('\n'));
  const run = (args: string[], config = s.coreconfigPath): Promise<{ code: number; out: string; err: string }> => new Promise((resolve) => {
    execFile(k133!, [...args, '--kubeconfig', config, '--cache-dir', join(dir, 'kcache')], { timeout: 30_000 },
      (e, out, err) => resolve({ code: e ? (typeof e.code === 'number' ? e.code : 1) : 0, out, err }));
  });
  const ok = async (args: string[]) => { const r = await run(args); t.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.err}`); return r; };
  await ok(['create', 'configmap', 'audited', '--from-literal=a=b', '-n', 'default']);
  await ok(['get', 'configmap', 'audited', '-n', 'default', '-o', 'name']);
  await ok(['label', 'configmap', 'audited', 'tier=x', '-n', 'default']);
  await ok(['delete', 'configmap', 'audited', '-n', 'default']);
  const refused = await run(['get', 'secrets', '-n', 'default'], carolConfig);
  t.not(refused.code, 0, 'carol may not list secrets');

  const events: Any[] = (await readFile(logFile, 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const find = (verb: string, resource: string, user: string) => events.filter((e) => e.verb === verb && e.objectRef?.resource === resource && e.user.username === user);
  const admin = { username: 'admin', groups: ['system:masters', 'system:authenticated'] };
  const ref = { resource: 'configmaps', namespace: 'default', name: 'audited', apiVersion: 'v1' };
  for (const [verb, code] of [['create', 201], ['get', 200], ['patch', 200], ['delete', 200]] as const) {
    const [e, ...more] = find(verb, 'configmaps', 'admin');
    t.ok(e, `kubectl's ${verb} is logged`);
    // (kubectl label reads the object before patching it: more than one get.)
    if (verb !== 'get') t.equal(more.length, 0, `once: ${verb}`);
    if (!e) continue;
    t.same(e.user, admin, `${verb}: the user`);
    t.same(e.objectRef, ref, `${verb}: the objectRef`);
    t.equal(e.responseStatus.code, code, `${verb}: the code`);
    t.match(e.userAgent, /^kubectl(\.1\.33)?\/v1\.33\./, `${verb}: kubectl's user agent`);
    t.equal(e.annotations['authorization.k8s.io/decision'], 'allow');
    t.equal(e.stage, 'ResponseComplete');
  }
  const [denied] = find('list', 'secrets', 'carol');
  t.ok(denied, 'the refused list is logged');
  t.same(denied?.user, { username: 'carol', uid: 'u-carol', groups: ['viewers', 'system:authenticated'] });
  t.same(denied?.objectRef, { resource: 'secrets', namespace: 'default', apiVersion: 'v1' });
  t.equal(denied?.responseStatus.code, 403);
  t.equal(denied?.annotations['authorization.k8s.io/decision'], 'forbid');
  t.notOk((await readFile(logFile, 'utf8')).includes('tok-carol-123456'), 'the token never reaches the log');
});
