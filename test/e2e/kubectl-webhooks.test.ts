/**
 * Real kubectl with the admission webhooks and the scheduling, node, networking and discovery
 * kinds: a ValidatingWebhookConfiguration backed by a real HTTPS webhook that denies (with its
 * message), allows with a warning, and cannot guard its own configuration; a mutating webhook's
 * JSONPatch, also under --dry-run=server; PriorityClasses (the built-in ones, kubectl's
 * generator, a pod's resolved priority, the undeletable system classes); the `kubernetes`
 * EndpointSlice; RuntimeClass and IngressClass tables; and api-resources for all of them.
 * Runs with kubectl.1.33 and kubectl.1.27 when installed.
 */
import t, { type Test } from 'tap';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { webhookConfigSource } from '../../src/daemons/apiserver/admission/webhook/config-source.js';
import type { WebhookFlavor } from '../../src/daemons/apiserver/admission/webhook/webhook.js';
import { startApiserver } from '../helpers/apiserver.js';
import { kubectl as kubectlBinary } from '../helpers/kubectl.js';
import { kubectlRunner, type KubectlRunner } from '../helpers/kubectl-run.js';
import { waitFor } from '../helpers/wait-for.js';
import { jsonPatchAnswer, tlsWebhookServer } from '../helpers/webhook-server.js';

const binaries = [33, 27].map(kubectlBinary).filter((x): x is string => !!x);
if (!binaries.length) t.comment('no versioned kubectl installed: nothing to run');

const a = binaries.length ? await startApiserver() : undefined;
const hooks = binaries.length ? await tlsWebhookServer() : undefined;
const work = await mkdtemp(join(tmpdir(), 'corectl-kubectl-webhooks-'));
t.teardown(async () => { await a?.stop(); await hooks?.close(); await rm(work, { recursive: true, force: true }); });

const KIND: Readonly<Record<WebhookFlavor, string>> = { mutating: 'MutatingWebhookConfiguration', validating: 'ValidatingWebhookConfiguration' };

/** A webhook configuration of one webhook at `path`, limited to namespace `ns` by the label every namespace has. */
function configuration(flavor: WebhookFlavor, name: string, hook: string, path: string, ns: string, rules: string): string {
  return `apiVersion: admissionregistration.k8s.io/v1
kind: ${KIND[flavor]}
metadata: {name: ${name}}
webhooks:
- name: ${hook}
  clientConfig: {url: "${hooks!.url(path)}", caBundle: ${hooks!.caBundle}}
  rules:
${rules}
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ${ns}}}
  sideEffects: None
  admissionReviewVersions: [v1]
`;
}
const CONFIGMAP_CREATE = '  - {operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}';

/** Applies a configuration from a file and waits until the server's plugin calls its webhook. */
async function applyConfiguration(t: Test, k: KubectlRunner, flavor: WebhookFlavor, name: string, yaml: string): Promise<void> {
  const file = join(work, `${name}.yaml`);
  await writeFile(file, yaml);
  t.equal(await k.ok(t, ['apply', '-f', file]), `${flavor}webhookconfiguration.admissionregistration.k8s.io/${name} created\n`);
  const rv = await k.ok(t, ['get', `${flavor}webhookconfigurations`, name, '-o', 'jsonpath={.metadata.resourceVersion}']);
  await waitFor(`${name} in effect`, () => webhookConfigSource(a!.parts!.store, flavor).has(name, rv));
  t.teardown(() => k.run(['delete', `${flavor}webhookconfigurations`, name, '--ignore-not-found']));
}

const gone = (flavor: WebhookFlavor, name: string): Promise<boolean> => waitFor(`${name} out of effect`, () => !webhookConfigSource(a!.parts!.store, flavor).has(name));

for (const bin of binaries) {
  const k = kubectlRunner(bin, a!.coreconfigPath, join(work, `cache-${bin.split('/').pop()}`));
  const tag = k.ver.replace(/\W/g, '');
  const ns = `hooks-${tag}`;
  const reviewsAt = (path: string): Array<Record<string, any>> => hooks!.reviews.filter((r) => r.path.split('?')[0] === path).map((r) => r.request); // eslint-disable-line @typescript-eslint/no-explicit-any

  t.test(`${k.ver}: a validating webhook denies, warns, and cannot guard its own configuration`, async (t) => {
    await k.ok(t, ['create', 'namespace', ns]);
    const name = `deny-prefix-${tag}`;
    const hook = `deny-prefix.${tag}.webhooks.test`;
    const path = `/validate-${tag}`;
    // Denies deny-* configmaps and any request about a webhook configuration, allows the rest with a warning.
    hooks!.answers.set(path, (req) => {
      if (req.kind.kind === KIND.validating) return { allowed: false, status: { code: 403, message: 'configurations are locked' } };
      if (String(req.name).startsWith('deny-')) return { allowed: false, status: { code: 403, reason: 'Forbidden', message: 'names starting with deny- are refused' } };
      return { allowed: true, warnings: [`configmap ${req.name} checked by ${hook}`] };
    });
    await applyConfiguration(t, k, 'validating', name, configuration('validating', name, hook, path, ns,
      `${CONFIGMAP_CREATE}\n  - {operations: ["*"], apiGroups: [admissionregistration.k8s.io], apiVersions: [v1], resources: [validatingwebhookconfigurations]}`));

    const denied = await k.run(['create', 'configmap', 'deny-me', '-n', ns, '--from-literal=a=b']);
    t.equal(denied.code, 1);
    t.equal(denied.stdout, '');
    t.equal(denied.stderr, `error: failed to create configmap: admission webhook "${hook}" denied the request: names starting with deny- are refused\n`);
    const missing = await k.run(['get', 'configmap', 'deny-me', '-n', ns]);
    t.equal(missing.stderr, 'Error from server (NotFound): configmaps "deny-me" not found\n', 'nothing stored');

    const allowed = await k.run(['create', 'configmap', 'ok-1', '-n', ns, '--from-literal=a=b']);
    t.equal(allowed.code, 0, allowed.stderr);
    t.equal(allowed.stdout, 'configmap/ok-1 created\n');
    t.equal(allowed.stderr, `Warning: configmap ok-1 checked by ${hook}\n`, "kubectl prints the webhook's warning");
    t.equal(await k.ok(t, ['get', 'configmap', 'ok-1', '-n', ns, '-o', 'jsonpath={.data.a}']), 'b');

    const table = await k.ok(t, ['get', 'validatingwebhookconfigurations']);
    t.match(table, /^NAME\s+WEBHOOKS\s+AGE$/m);
    t.match(table, new RegExp(`^${name}\\s+1\\s+\\d+s$`, 'm'));

    t.equal(await k.ok(t, ['delete', 'validatingwebhookconfiguration', name]), `validatingwebhookconfiguration.admissionregistration.k8s.io "${name}" deleted\n`);
    t.notOk(reviewsAt(path).some((r) => r.kind.kind === KIND.validating), 'no review for its own configuration');
    await gone('validating', name);
    t.equal(await k.ok(t, ['create', 'configmap', 'deny-me', '-n', ns]), 'configmap/deny-me created\n', 'no longer denied');
  });

  t.test(`${k.ver}: a mutating webhook's JSONPatch, stored and under --dry-run=server`, async (t) => {
    const name = `add-label-${tag}`;
    const path = `/mutate-${tag}`;
    hooks!.answers.set(path, (req) => jsonPatchAnswer(req.object.metadata.labels
      ? [{ op: 'add', path: '/metadata/labels/added-by', value: 'webhook' }]
      : [{ op: 'add', path: '/metadata/labels', value: { 'added-by': 'webhook' } }]));
    await applyConfiguration(t, k, 'mutating', name, configuration('mutating', name, `add-label.${tag}.webhooks.test`, path, ns, CONFIGMAP_CREATE));

    t.equal(await k.ok(t, ['create', 'configmap', 'labelled', '-n', ns, '--from-literal=a=b']), 'configmap/labelled created\n');
    t.equal(await k.ok(t, ['get', 'cm', 'labelled', '-n', ns, '-o', 'jsonpath={.metadata.labels}']), '{"added-by":"webhook"}');

    const dry = load(await k.ok(t, ['create', 'configmap', 'dry', '-n', ns, '--from-literal=a=b', '--dry-run=server', '-o', 'yaml'])) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    t.match(dry, { kind: 'ConfigMap', metadata: { name: 'dry', namespace: ns, labels: { 'added-by': 'webhook' } }, data: { a: 'b' } });
    t.match(reviewsAt(path).at(-1), { name: 'dry', dryRun: true }, 'the webhook was told it was a dry run');
    const missing = await k.run(['get', 'cm', 'dry', '-n', ns]);
    t.equal(missing.code, 1, 'nothing stored');
    t.match(missing.stderr, /configmaps "dry" not found/);

    await k.ok(t, ['delete', 'mutatingwebhookconfiguration', name]);
    await gone('mutating', name);
  });

  t.test(`${k.ver}: priority classes`, async (t) => {
    const table = await k.ok(t, ['get', 'pc']);
    t.match(table, /^NAME\s+VALUE\s+GLOBAL-DEFAULT\s+AGE\s+PREEMPTIONPOLICY$/m);
    t.match(table, /^system-cluster-critical\s+2000000000\s+false\s+\S+\s+PreemptLowerPriority$/m);
    t.match(table, /^system-node-critical\s+2000001000\s+false\s+\S+\s+PreemptLowerPriority$/m);

    const high = `high-${tag}`;
    t.equal(await k.ok(t, ['create', 'priorityclass', high, '--value=1000', '--global-default=false', '--description=x']), `priorityclass.scheduling.k8s.io/${high} created\n`);
    const created = await k.json(t, ['get', 'pc', high]);
    t.match(created, { value: 1000, description: 'x', preemptionPolicy: 'PreemptLowerPriority' });
    t.notOk('globalDefault' in created, 'globalDefault false is left out (omitempty), as Kubernetes writes it');
    t.match(await k.ok(t, ['get', 'pc', high]), new RegExp(`^${high}\\s+1000\\s+false\\s+\\S+\\s+PreemptLowerPriority$`, 'm'));
    t.teardown(() => k.run(['delete', 'pc', high, '--ignore-not-found']));

    t.equal(await k.ok(t, ['run', 'prio', '-n', ns, '--image=nginx', `--overrides={"apiVersion":"v1","spec":{"priorityClassName":"${high}"}}`]), 'pod/prio created\n');
    t.equal(await k.ok(t, ['get', 'pod', 'prio', '-n', ns, '-o', 'jsonpath={.spec.priorityClassName} {.spec.priority} {.spec.preemptionPolicy}']), `${high} 1000 PreemptLowerPriority`);

    const refused = await k.run(['delete', 'pc', 'system-node-critical']);
    t.equal(refused.code, 1);
    t.equal(refused.stderr, 'Error from server (Forbidden): priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority class and cannot be deleted\n');
    t.equal(await k.ok(t, ['get', 'pc', 'system-node-critical', '-o', 'name']), 'priorityclass.scheduling.k8s.io/system-node-critical\n', 'still there');
  });

  t.test(`${k.ver}: the kubernetes EndpointSlice and api-resources`, async (t) => {
    const table = await k.ok(t, ['get', 'endpointslices', '-n', 'default']);
    t.match(table, /^NAME\s+ADDRESSTYPE\s+PORTS\s+ENDPOINTS\s+AGE$/m);
    // The server advertises 127.0.0.1, which a slice may not hold: no endpoints, as Kubernetes
    // would refuse it. The port is the configured --secure-port (the helper's 6443; the test
    // listener itself is bound to a free port).
    t.match(table, /^kubernetes\s+IPv4\s+6443\s+<unset>\s+\S+$/m);
    const slice = await k.json(t, ['get', 'endpointslice', 'kubernetes', '-n', 'default']);
    t.match(slice, { addressType: 'IPv4', metadata: { labels: { 'kubernetes.io/service-name': 'kubernetes' } }, ports: [{ name: 'https', port: 6443, protocol: 'TCP' }] });
    t.same(slice.endpoints, [], 'no endpoint for a loopback address');

    const res = await k.ok(t, ['api-resources']);
    t.match(res, /^priorityclasses\s+pc\s+scheduling\.k8s\.io\/v1\s+false\s+PriorityClass$/m);
    t.match(res, /^runtimeclasses\s+node\.k8s\.io\/v1\s+false\s+RuntimeClass$/m);
    t.match(res, /^ingressclasses\s+networking\.k8s\.io\/v1\s+false\s+IngressClass$/m);
    t.match(res, /^endpointslices\s+discovery\.k8s\.io\/v1\s+true\s+EndpointSlice$/m);
    t.match(res, /^mutatingwebhookconfigurations\s+admissionregistration\.k8s\.io\/v1\s+false\s+MutatingWebhookConfiguration$/m);
    t.match(res, /^validatingwebhookconfigurations\s+admissionregistration\.k8s\.io\/v1\s+false\s+ValidatingWebhookConfiguration$/m);
  });

  t.test(`${k.ver}: RuntimeClass and IngressClass applied and listed`, async (t) => {
    const runtime = `gvisor-${tag}`;
    const ingress = `nginx-${tag}`;
    const file = join(work, `classes-${tag}.yaml`);
    await writeFile(file, `apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: ${runtime}}
handler: runsc
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: ${ingress}}
spec:
  controller: example.com/ingress-controller
  parameters: {apiGroup: k8s.example.com, kind: IngressParameters, name: external-lb}
`);
    t.equal(await k.ok(t, ['apply', '-f', file]), `runtimeclass.node.k8s.io/${runtime} created\ningressclass.networking.k8s.io/${ingress} created\n`);
    t.teardown(() => k.run(['delete', '-f', file, '--ignore-not-found']));
    const runtimes = await k.ok(t, ['get', 'runtimeclass']);
    t.match(runtimes, /^NAME\s+HANDLER\s+AGE$/m);
    t.match(runtimes, new RegExp(`^${runtime}\\s+runsc\\s+\\d+s$`, 'm'));
    const ingresses = await k.ok(t, ['get', 'ingressclass']);
    t.match(ingresses, /^NAME\s+CONTROLLER\s+PARAMETERS\s+AGE$/m);
    t.match(ingresses, new RegExp(`^${ingress}\\s+example\\.com/ingress-controller\\s+IngressParameters\\.k8s\\.example\\.com/external-lb\\s+\\d+s$`, 'm'));
    t.match((await k.json(t, ['get', 'ingressclass', ingress])).spec.parameters, { scope: 'Cluster' }, 'scope defaulted');
  });
}
