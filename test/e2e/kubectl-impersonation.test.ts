// End to end: real kubectl 1.27 and 1.33 with --as / --as-group against the full server under
// --authorization-mode=ABAC (AlwaysAllow off). alice holds the impersonate verb; bob does not
// and gets Kubernetes' 403; the impersonated user's own permissions decide what runs.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { abacServer } from '../helpers/abac-server.js';
import type { StartedApiserver } from '../helpers/apiserver.js';
import { kubectl } from '../helpers/kubectl.js';
import { kubectlRunner } from '../helpers/kubectl-run.js';

/** A coreconfig for another user with the client certificate given. */
async function configFor(s: StartedApiserver, name: string, pair: { certPem: string; keyPem: string }): Promise<string> {
  const b64 = (x: string): string => Buffer.from(x).toString('base64');
  const text = (await readFile(s.coreconfigPath, 'utf8'))
    .replace(/client-certificate-data: .*/, `client-certificate-data: ${b64(pair.certPem)}`)
    .replace(/client-key-data: .*/, `client-key-data: ${b64(pair.keyPem)}`);
  const path = join(s.dir, `coreconfig-${name}`);
  await writeFile(path, text, { mode: 0o600 });
  return path;
}

for (const minor of [27, 33]) {
  const bin = kubectl(minor);
  t.test(`kubectl 1.${minor} --as / --as-group`, { skip: bin ? false : `kubectl.1.${minor} not installed` }, async (t) => {
    const { s, users } = await abacServer(t);
    const alice = kubectlRunner(bin!, await configFor(s, 'alice', users.alice!), join(s.dir, `kcache-alice-${minor}`));
    const bob = kubectlRunner(bin!, await configFor(s, 'bob', users.bob!), join(s.dir, `kcache-bob-${minor}`));

    // Discovery is refused first; kubectl (as against Kubernetes) prints that as "Forbidden: unknown".
    let r = await bob.run(['get', 'pods', '-n', 'dave-ns', '--as=dave']);
    t.not(r.code, 0, 'without the impersonate verb kubectl fails');
    t.match(r.stderr, /Error from server \(Forbidden\)/);
    r = await bob.run(['get', '--raw', '/api/v1/namespaces/dave-ns/pods', '--as=dave', '--as-group=ops']);
    t.not(r.code, 0);
    t.match(r.stderr, /Error from server \(Forbidden\): users "dave" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope/);
    r = await bob.run(['auth', 'can-i', 'list', 'pods', '-n', 'dave-ns', '--as=dave']);
    t.match(r.stderr, /users "dave" is forbidden: User "bob" cannot impersonate resource "users"/, 'can-i --as without the verb');
    await bob.ok(t, ['get', 'pods', '-n', 'dave-ns']);

    r = await alice.run(['get', 'pods', '-n', 'dave-ns', '--as=dave']);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stderr, /No resources found in dave-ns namespace/);
    r = await alice.run(['get', 'pods', '-n', 'other', '--as=dave']);
    t.not(r.code, 0);
    t.match(r.stderr, /pods is forbidden: User "dave" cannot list resource "pods" in API group "" in the namespace "other"/, 'dave\'s own permissions decide');
    await alice.ok(t, ['get', 'secrets', '-n', 'other', '--as=dave', '--as-group=ops']);
    r = await alice.run(['get', 'configmaps', '-n', 'ns1', '--as=system:serviceaccount:ns1:sa1']);
    t.equal(r.code, 0, `as a service account: ${r.stderr}`);
    r = await alice.run(['get', 'configmaps', '-n', 'ns2', '--as=system:serviceaccount:ns2:sa2']);
    t.match(r.stderr, /serviceaccounts "sa2" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns2"/);

    r = await alice.run(['auth', 'can-i', 'list', 'pods', '-n', 'dave-ns', '--as=dave']);
    t.equal(r.stdout.trim(), 'yes', `can-i --as: ${r.stderr}`);
    r = await alice.run(['auth', 'can-i', 'list', 'pods', '-n', 'other', '--as=dave']);
    t.match(r.stdout.trim(), /^no( - No policy matched\.)?$/, 'can-i --as: no (with ABAC\'s reason)');
    if (minor >= 28) {
      const me = await alice.json(t, ['auth', 'whoami', '--as=dave', '--as-group=ops']);
      t.same(me.status.userInfo, { username: 'dave', groups: ['ops', 'system:authenticated'] }, 'whoami shows the impersonated user');
    }
  });
}
