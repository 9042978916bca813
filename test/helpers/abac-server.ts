/**
 * A full in-process API server under --authorization-mode=ABAC (AlwaysAllow off) with a policy
 * for impersonation tests: alice may impersonate users, groups, uids, extras and the service
 * accounts of ns1; carol only users; bob only reads. (Not a test file itself.)
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { startApiserver, type StartedApiserver } from './apiserver.js';

const policy = (spec: Record<string, unknown>): string => JSON.stringify({ apiVersion: 'abac.authorization.kubernetes.io/v1beta1', kind: 'Policy', spec });

export const IMPERSONATION_POLICY = [
  '# discovery, SelfSubjectReview and SelfSubjectAccessReview for everyone authenticated',
  policy({ user: '*', readonly: true, nonResourcePath: '*' }),
  policy({ user: '*', namespace: '*', resource: 'selfsubjectreviews', apiGroup: 'authentication.k8s.io' }),
  policy({ user: '*', namespace: '*', resource: 'selfsubjectaccessreviews', apiGroup: 'authorization.k8s.io' }),
  '# alice may impersonate users, groups, uids, extras, and service accounts of ns1',
  policy({ user: 'alice', namespace: '*', resource: 'users', apiGroup: '' }),
  policy({ user: 'alice', namespace: '*', resource: 'groups', apiGroup: '' }),
  policy({ user: 'alice', namespace: '*', resource: 'uids', apiGroup: 'authentication.k8s.io' }),
  policy({ user: 'alice', namespace: '*', resource: 'userextras', apiGroup: 'authentication.k8s.io' }),
  policy({ user: 'alice', namespace: 'ns1', resource: 'serviceaccounts', apiGroup: '' }),
  '# carol may impersonate users only; bob only reads',
  policy({ user: 'carol', namespace: '*', resource: 'users', apiGroup: '' }),
  policy({ user: 'bob', readonly: true, namespace: '*', resource: '*', apiGroup: '*' }),
  '# what the impersonated identities may do',
  policy({ user: 'dave', namespace: 'dave-ns', resource: 'pods', apiGroup: '' }),
  policy({ group: 'ops', namespace: '*', resource: '*', apiGroup: '*' }),
  policy({ group: 'system:serviceaccounts:ns1', namespace: 'ns1', resource: 'configmaps', apiGroup: '' }),
  '',
].join('\n');

/** A full server under --authorization-mode=ABAC with the policy above, and client certificates for alice, bob and carol. */
export async function abacServer(t: Test): Promise<{ s: StartedApiserver; users: Record<string, { certPem: string; keyPem: string }> }> {
  const dir = await mkdtemp(join(tmpdir(), 'impersonation-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'policy.jsonl');
  await writeFile(file, IMPERSONATION_POLICY);
  const s = await startApiserver({ args: ['--authorization-mode=ABAC', `--authorization-policy-file=${file}`] });
  t.teardown(() => s.stop());
  const users: Record<string, { certPem: string; keyPem: string }> = {};
  for (const u of ['alice', 'bob', 'carol']) users[u] = await s.issueClient(u);
  return { s, users };
}

