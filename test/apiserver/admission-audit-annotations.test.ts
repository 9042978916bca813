/**
 * The audit annotations admission plugins leave on a request that collects them
 * (AdmissionRequestInfo.auditAnnotations), with Kubernetes' keys: PodSecurity's enforce-policy,
 * audit-violations and exempt; ImagePolicyWebhook's backend annotations and failed-open.
 */
import { createServer } from 'node:http';
import t from 'tap';
import { podSecurity, parsePodSecurityConfig } from '../../src/daemons/apiserver/admission/pod-security/plugin.js';
import { imagePolicyWebhook } from '../../src/daemons/apiserver/admission/image-policy-webhook.js';
import type { AdmissionAttributes, AdmissionContext } from '../../src/daemons/apiserver/admission/types.js';
import type { ResourceDefinition } from '../../src/api/resources/types.js';
import type { ObjectStore } from '../../src/storage/object-store-types.js';

const pods = { group: '', plural: 'pods', kind: 'Pod', namespaced: true } as unknown as ResourceDefinition;
const namespaces: Record<string, object> = {
  audited: { metadata: { name: 'audited', labels: { 'pod-security.kubernetes.io/enforce': 'baseline', 'pod-security.kubernetes.io/audit': 'restricted' } } },
  free: { metadata: { name: 'free' } },
};
const store = { peekEntry: (ref: { name: string }) => ({ kv: { key: ref.name }, decode: async () => namespaces[ref.name] }) } as unknown as ObjectStore;

function attrs(namespace: string, spec: object = {}): AdmissionAttributes & { request: { auditAnnotations: Record<string, string> } } {
  return {
    operation: 'CREATE', def: pods, subresource: '', namespace, name: 'p', dryRun: false,
    object: { metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'busybox' }], ...spec } },
    request: { user: { name: 'alice', groups: [] }, version: 'v1', warnings: [], auditAnnotations: {} },
  } as never;
}

t.test('PodSecurity: enforce-policy, audit-violations, exempt', async (t) => {
  const config = parsePodSecurityConfig({ apiVersion: 'pod-security.admission.config.k8s.io/v1', kind: 'PodSecurityConfiguration', exemptions: { runtimeClasses: ['kata'] } });
  const p = podSecurity({ store, pluginConfigs: new Map([['PodSecurity', config]]) } as AdmissionContext);
  const a = attrs('audited');
  await p.validate!(a);
  t.equal(a.request.auditAnnotations['pod-security.kubernetes.io/enforce-policy'], 'baseline:latest');
  t.match(a.request.auditAnnotations['pod-security.kubernetes.io/audit-violations'], /^would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false/);
  const ex = attrs('audited', { runtimeClassName: 'kata' });
  await p.validate!(ex);
  t.same(ex.request.auditAnnotations, { 'pod-security.kubernetes.io/exempt': 'runtimeClass' });
  const free = attrs('free');
  await p.validate!(free);
  t.same(free.request.auditAnnotations, {}, 'a namespace all privileged is not evaluated');
});

t.test('ImagePolicyWebhook: the backend\'s annotations prefixed, and failed-open', async (t) => {
  let fail = false;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (fail) { res.writeHead(503); res.end(); return; }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: { allowed: true, auditAnnotations: { 'checked-by': 'scanner' } } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => { server.close(); server.closeAllConnections(); });
  const port = (server.address() as { port: number }).port;
  const config = { connection: { server: `http://127.0.0.1:${port}/` }, allowTtlMs: 1, denyTtlMs: 1, retryBackoffMs: 1, defaultAllow: true };
  const p = imagePolicyWebhook({ store, pluginConfigs: new Map([['ImagePolicyWebhook', config]]) } as AdmissionContext);
  const a = attrs('free');
  await p.validate!(a);
  t.same(a.request.auditAnnotations, { 'imagepolicywebhook.image-policy.k8s.io/checked-by': 'scanner' });
  fail = true;
  const b = attrs('free', { containers: [{ name: 'c', image: 'other' }] });
  await p.validate!(b);
  t.same(b.request.auditAnnotations, { 'imagepolicywebhook.image-policy.k8s.io/failed-open': 'true' });
  t.equal((b.object!.metadata!.annotations as Record<string, string>)['alpha.image-policy.k8s.io/failed-open'], 'true');
});
