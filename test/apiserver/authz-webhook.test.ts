// --authorization-mode=Webhook on the full in-process API server: the coreconfig of
// --authorization-webhook-config-file (server, CA, client certificate), the remote service's
// allow / deny / no-opinion reaching clients as Kubernetes answers them (403 with the reason),
// the answer cache (--authorization-webhook-cache-*-ttl), and the start-up errors of the option.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import t from 'tap';
import { createCA, issueCert } from '../../src/util/pki.js';
import { h2request, runExpectingStartFailure, startApiserver } from '../helpers/apiserver.js';
import { sarWebhookServer } from '../helpers/webhook-server.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

function webhookConfig(server: string, caPem: string, cert: string, key: string): string {
  return [
    'apiVersion: v1', 'kind: Config', 'current-context: webhook',
    'clusters:', '- name: authz', '  cluster:', `    server: ${server}`, `    certificate-authority-data: ${b64(caPem)}`,
    'users:', '- name: apiserver', '  user:', `    client-certificate-data: ${b64(cert)}`, `    client-key-data: ${b64(key)}`,
    'contexts:', '- name: webhook', '  context:', '    cluster: authz', '    user: apiserver', '',
  ].join('\n');
}

t.test('Webhook mode: the service allows, denies or has no opinion; answers are cached', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'authz-webhook-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const clientCa = await createCA({ commonName: 'apiserver-webhook-client-ca' });
  const client = await issueCert({ ca: clientCa, commonName: 'kube-apiserver', usages: 'client' });
  const hook = await sarWebhookServer({ clientCaPem: clientCa.certPem });
  t.teardown(() => hook.close());
  hook.answer = (rv) => {
    const ns = rv.spec.resourceAttributes?.namespace;
    if (ns === 'allowed') return { allowed: true };
    if (ns === 'denied') return { allowed: false, denied: true, reason: 'namespace denied is off limits' };
    return { allowed: false, reason: 'no rule for you' };
  };
  const config = join(dir, 'webhook.yaml');
  await writeFile(config, webhookConfig(hook.url, hook.caPem, client.certPem, client.keyPem));
  const s = await startApiserver({ args: ['--authorization-mode=Webhook,AlwaysAllow', `--authorization-webhook-config-file=${config}`, '--authorization-webhook-cache-unauthorized-ttl=0s'] });
  t.teardown(() => s.stop());
  const bob = await s.issueClient('bob', ['dev']);
  const get = (path: string) => h2request(s.url, { path, ca: s.ca.certPem, cert: bob.certPem, key: bob.keyPem });

  let r = await get('/api/v1/namespaces/allowed/pods');
  t.equal(r.status, 200, 'allowed by the webhook');
  t.equal(hook.reviews.length, 1);
  t.equal(hook.reviews[0]!.clientCN, 'kube-apiserver', 'the coreconfig client certificate is presented');
  t.same(hook.reviews[0]!.review.spec.resourceAttributes, { namespace: 'allowed', verb: 'list', version: 'v1', resource: 'pods' });
  t.equal(hook.reviews[0]!.review.spec.user, 'bob');
  r = await get('/api/v1/namespaces/allowed/pods');
  t.equal(r.status, 200);
  t.equal(hook.reviews.length, 1, 'the second request within the authorized TTL (5m default) was not sent');

  r = await get('/api/v1/namespaces/denied/pods');
  t.equal(r.status, 403, 'a denial stops the chain before AlwaysAllow');
  const status = JSON.parse(r.body);
  t.equal(status.reason, 'Forbidden');
  t.equal(status.message, 'pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "denied": namespace denied is off limits');

  const before = hook.reviews.length;
  r = await get('/api/v1/namespaces/other/pods');
  t.equal(r.status, 200, 'no opinion: AlwaysAllow decides');
  r = await get('/api/v1/namespaces/other/pods');
  t.equal(hook.reviews.length, before + 2, 'unauthorized TTL 0s: not cached');

  const admin = await h2request(s.url, { path: '/api/v1/namespaces/denied/pods', ca: s.ca.certPem, cert: await readPem(s.clientCertFile), key: await readPem(s.clientKeyFile) });
  t.equal(admin.status, 200, 'system:masters is allowed before any mode');
});

t.test('Webhook mode alone: a failing service is no opinion, so the request is forbidden', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'authz-webhook-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const hook = await sarWebhookServer();
  t.teardown(() => hook.close());
  hook.answer = () => ({ status: 400, body: 'bad' });
  const config = join(dir, 'webhook.yaml');
  await writeFile(config, webhookConfig(hook.url, hook.caPem, '', '').replace(/ {2}user:\n.*\n.*\n/, '  user: {}\n'));
  const s = await startApiserver({ args: ['--authorization-mode=Webhook', `--authorization-webhook-config-file=${config}`] });
  t.teardown(() => s.stop());
  const bob = await s.issueClient('bob');
  const r = await h2request(s.url, { path: '/api/v1/namespaces/x/pods', ca: s.ca.certPem, cert: bob.certPem, key: bob.keyPem });
  t.equal(r.status, 403);
  t.equal(hook.reviews.length, 1, 'asked once (400 is not retried)');
});

t.test('start-up: a missing, bad or unneeded webhook config stops the start with one line naming the option', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'authz-webhook-start-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const bad = join(dir, 'bad.yaml');
  await writeFile(bad, 'apiVersion: v1\nkind: Config\ncurrent-context: nope\n');
  const log = pino({ level: 'silent' });
  const cases: Array<[string[], RegExp]> = [
    [['--authorization-mode=Webhook'], /^apiserver: --authorization-webhook-config-file: required by --authorization-mode Webhook/],
    [['--authorization-mode=Webhook', `--authorization-webhook-config-file=${join(dir, 'missing.yaml')}`], /^apiserver: --authorization-webhook-config-file: coreconfig .*missing\.yaml: cannot read: ENOENT/],
    [['--authorization-mode=Webhook', `--authorization-webhook-config-file=${bad}`], /^apiserver: --authorization-webhook-config-file: coreconfig .*bad\.yaml: context "nope" not found/],
    [['--authorization-mode=AlwaysAllow', `--authorization-webhook-config-file=${bad}`], /^apiserver: --authorization-webhook-config-file: cannot be given without --authorization-mode Webhook/],
  ];
  for (const [args, want] of cases) {
    const { code, stderr } = await runExpectingStartFailure(['--secure-port=0', `--data-dir=${join(dir, 'data')}`, `--cert-dir=${join(dir, 'certs')}`, ...args], log);
    t.equal(code, 1, args.join(' '));
    t.match(stderr, want);
    t.equal(stderr.trim().split('\n').length, 1, 'one line');
  }
});

async function readPem(file: string): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  return readFile(file, 'utf8');
}
