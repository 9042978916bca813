/**
 * Real kubectl against the API server: discovery, create/apply (client- and server-side),
 * get in every output form, watch, describe, edit, patch, label/annotate, scale, delete and
 * wait. Runs with kubectl.1.33 and kubectl.1.27 when installed (else the `kubectl` on PATH).
 * Writes use kubectl's default validation (strict, through the served OpenAPI documents).
 */
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApiserver } from '../helpers/apiserver.js';
import { kubectl as kubectlBinary } from '../helpers/kubectl.js';
import { kubectlRunner } from '../helpers/kubectl-run.js';

const binaries = [33, 27].map(kubectlBinary).filter((x): x is string => !!x);
if (!binaries.length) t.comment('no kubectl on PATH: nothing to run');

const a = binaries.length ? await startApiserver() : undefined;
const work = await mkdtemp(join(tmpdir(), 'corectl-kubectl-'));
t.teardown(async () => { await a?.stop(); await rm(work, { recursive: true, force: true }); });


for (const bin of binaries) {
  const ver = bin.split('/').pop()!;
  const ns = `e2e-${ver.replace(/\W/g, '')}`;
  const cacheDir = join(work, `cache-${ver}`);
  const { run: kc, ok, json } = kubectlRunner(bin, a!.coreconfigPath, cacheDir);

  const deployment = (image: string, replicas = 2): string => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ${ns}
  labels: {app: web}
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: c
        image: ${image}
        ports: [{containerPort: 80}]
`;

  t.test(`${ver}: discovery and namespaces`, async (t) => {
    const res = await ok(t, ['api-resources']);
    t.match(res, /^pods\s+po\s+v1\s+true\s+Pod$/m);
    t.match(res, /^deployments\s+deploy\s+apps\/v1\s+true\s+Deployment$/m);
    t.match(res, /^horizontalpodautoscalers\s+hpa\s+autoscaling\/v2\s+true/m);
    await ok(t, ['create', 'namespace', ns]);
    const nsList = await ok(t, ['get', 'ns']);
    t.match(nsList, /^NAME\s+STATUS\s+AGE$/m);
    t.match(nsList, new RegExp(`^${ns}\\s+Active\\s+`, 'm'));
    t.match(await ok(t, ['get', 'svc', '-n', 'default', 'kubernetes', '-o', 'wide']), /^kubernetes\s+ClusterIP\s+10\.0\.0\.1\s+<none>\s+443\/TCP\s+\S+\s+<none>$/m);
  });

  t.test(`${ver}: create, apply twice, server-side apply`, async (t) => {
    const f = join(work, `${ver}-deploy.yaml`);
    await writeFile(f, deployment('nginx:1.25'));
    t.match(await ok(t, ['apply', '-f', f]), /deployment.apps\/web created/);
    await writeFile(f, deployment('nginx:1.26'));
    t.match(await ok(t, ['apply', '-f', f]), /deployment.apps\/web configured/);
    let d = await json(t, ['get', 'deploy', 'web', '-n', ns]);
    t.equal(d.spec.template.spec.containers[0].image, 'nginx:1.26');
    t.equal(d.metadata.generation, 2);
    t.ok(d.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'], 'client-side apply annotation kept');
    await writeFile(f, deployment('nginx:1.27', 3));
    t.match(await ok(t, ['apply', '--server-side', '-f', f]), /serverside-applied/);
    d = await json(t, ['get', 'deploy', 'web', '-n', ns, '--show-managed-fields']);
    t.equal(d.spec.replicas, 3);
    t.equal(d.spec.template.spec.containers[0].image, 'nginx:1.27');
    t.ok(d.metadata.managedFields.some((m: { manager: string; operation: string }) => m.manager === 'kubectl' && m.operation === 'Apply'));
    await ok(t, ['create', '-n', ns, '-f', '-'], { input: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm1}\ndata: {k: v}\n' });
    const dup = await kc(['create', '-n', ns, '-f', '-'], { input: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm1}\n' });
    t.not(dup.code, 0);
    t.match(dup.stderr, /AlreadyExists/);
    const strict = await kc(['create', '-n', ns, '-f', '-'], { input: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-strict}\nbogus: 1\n' });
    t.not(strict.code, 0);
    t.match(strict.stderr, /unknown field "bogus"/);
    t.equal((await kc(['get', 'cm', 'cm-strict', '-n', ns])).code, 1, 'nothing created');
  });

  t.test(`${ver}: get forms`, async (t) => {
    const wide = await ok(t, ['get', 'deploy', '-n', ns, '-o', 'wide']);
    t.match(wide, /^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\s+CONTAINERS\s+IMAGES\s+SELECTOR$/m);
    t.match(wide, /^web\s+0\/3\s+0\s+0\s+\S+\s+c\s+nginx:1.27\s+app=web$/m);
    const yaml = await ok(t, ['get', 'deploy', 'web', '-n', ns, '-o', 'yaml']);
    t.match(yaml, /^kind: Deployment$/m);
    t.match(yaml, /maxSurge: 25%/);
    t.equal(await ok(t, ['get', 'deploy', 'web', '-n', ns, '-o', 'jsonpath={.spec.strategy.type}/{.spec.revisionHistoryLimit}']), 'RollingUpdate/10');
    t.match(await ok(t, ['get', 'cm', '-n', ns]), /^cm1\s+1\s+\S+$/m);
    t.match(await ok(t, ['get', 'all', '-n', ns]), /deployment.apps\/web/);
    const none = await kc(['get', 'pods', '-n', ns]);
    t.match(none.stderr, /No resources found in .* namespace/);
    t.match(await ok(t, ['get', 'cm', '-A', '--show-labels']), new RegExp(`^${ns}\\s+cm1\\s+1\\s+\\S+\\s+<none>$`, 'm'));
  });

  t.test(`${ver}: watch prints changes`, async (t) => {
    const child = spawn(bin, [`--kubeconfig=${a!.coreconfigPath}`, `--cache-dir=${cacheDir}`, 'get', 'cm', '-n', ns, '-w'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => { out += c.toString(); });
    const waitFor = async (re: RegExp): Promise<boolean> => {
      for (let i = 0; i < 100; i++) { if (re.test(out)) return true; await new Promise((r) => setTimeout(r, 100)); }
      return false;
    };
    t.ok(await waitFor(/^cm1\s+1\s+/m), 'initial list');
    await ok(t, ['create', 'configmap', 'cm2', '-n', ns, '--from-literal=a=b', '--from-literal=c=d']);
    t.ok(await waitFor(/^cm2\s+2\s+/m), 'watched ADDED row');
    t.equal(out.match(/^NAME\s+DATA\s+AGE$/gm)?.length, 1, 'one header: watch events are tables');
    child.kill();
  });

  t.test(`${ver}: describe, edit, patch, label, annotate, scale`, async (t) => {
    t.match(await ok(t, ['describe', 'deploy', 'web', '-n', ns]), /Replicas:\s+3 desired/);
    const editor = join(work, `${ver}-editor.sh`);
    await writeFile(editor, '#!/bin/sh\nsed -i "s/replicas: 3/replicas: 4/" "$1"\n');
    await chmod(editor, 0o755);
    await ok(t, ['edit', 'deploy', 'web', '-n', ns], { env: { KUBE_EDITOR: editor, EDITOR: editor } });
    t.equal((await json(t, ['get', 'deploy', 'web', '-n', ns])).spec.replicas, 4);
    await ok(t, ['patch', 'deploy', 'web', '-n', ns, '--type=merge', '-p', '{"spec":{"minReadySeconds":5}}']);
    await ok(t, ['patch', 'deploy', 'web', '-n', ns, '--type=json', '-p', '[{"op":"replace","path":"/spec/revisionHistoryLimit","value":4}]']);
    await ok(t, ['patch', 'deploy', 'web', '-n', ns, '-p', '{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox"}]}}}}']);
    let d = await json(t, ['get', 'deploy', 'web', '-n', ns]);
    t.equal(d.spec.minReadySeconds, 5);
    t.equal(d.spec.revisionHistoryLimit, 4);
    t.same(d.spec.template.spec.containers.map((c: { name: string }) => c.name).sort(), ['c', 'side'], 'strategic merge kept the old container');
    await ok(t, ['label', 'deploy', 'web', '-n', ns, 'tier=front']);
    await ok(t, ['annotate', 'deploy', 'web', '-n', ns, 'note=hi']);
    t.match(await ok(t, ['scale', 'deploy', 'web', '-n', ns, '--replicas=1']), /scaled/);
    d = await json(t, ['get', 'deploy', 'web', '-n', ns]);
    t.equal(d.metadata.labels.tier, 'front');
    t.equal(d.metadata.annotations.note, 'hi');
    t.equal(d.spec.replicas, 1);
    t.match(await ok(t, ['get', 'deploy', '-n', ns, '-l', 'tier=front', '-o', 'name']), /^deployment.apps\/web$/m);
    const bad = await kc(['scale', 'deploy', 'nope', '-n', ns, '--replicas=1']);
    t.not(bad.code, 0);
    t.match(bad.stderr, /not found|no objects passed/);
  });

  t.test(`${ver}: services keep their allocations across applies; events`, async (t) => {
    const svc = (targetPort: number): string => `apiVersion: v1\nkind: Service\nmetadata: {name: front, namespace: ${ns}}\nspec:\n  type: NodePort\n  selector: {app: web}\n  ports: [{name: http, port: 80, targetPort: ${targetPort}}]\n`;
    await ok(t, ['apply', '-f', '-'], { input: svc(8080) });
    const first = await json(t, ['get', 'svc', 'front', '-n', ns]);
    await ok(t, ['apply', '-f', '-'], { input: svc(9090) });
    const second = await json(t, ['get', 'svc', 'front', '-n', ns]);
    t.equal(second.spec.ports[0].targetPort, 9090);
    t.equal(second.spec.clusterIP, first.spec.clusterIP, 'cluster IP kept');
    t.equal(second.spec.ports[0].nodePort, first.spec.ports[0].nodePort, 'node port kept');
    t.match(await ok(t, ['get', 'svc', 'front', '-n', ns]), new RegExp(`^front\\s+NodePort\\s+10\\.0\\.0\\.\\d+\\s+<none>\\s+80:${first.spec.ports[0].nodePort}/TCP\\s+`, 'm'));
    await ok(t, ['create', '-f', '-'], { input: `apiVersion: v1\nkind: Pod\nmetadata: {name: evp, namespace: ${ns}}\nspec: {containers: [{name: c, image: nginx}]}\n` });
    const pod = await json(t, ['get', 'pod', 'evp', '-n', ns]);
    await ok(t, ['create', '-f', '-'], { input: `apiVersion: v1\nkind: Event\nmetadata: {name: evp.1, namespace: ${ns}}\ninvolvedObject: {kind: Pod, name: evp, namespace: ${ns}, uid: ${pod.metadata.uid}, apiVersion: v1}\nreason: Scheduled\nmessage: assigned to node-x\ntype: Normal\nsource: {component: default-scheduler}\nfirstTimestamp: "2024-01-01T00:00:00Z"\nlastTimestamp: "2024-01-01T00:00:00Z"\ncount: 1\n` });
    t.match(await ok(t, ['get', 'events', '-n', ns]), /^\S+\s+Normal\s+Scheduled\s+pod\/evp\s+assigned to node-x$/m);
    t.match(await ok(t, ['describe', 'pod', 'evp', '-n', ns]), /Normal\s+Scheduled\s+\S+\s+default-scheduler\s+assigned to node-x/);
    await ok(t, ['delete', 'pod', 'evp', '-n', ns]);
  });

  t.test(`${ver}: delete and wait --for=delete`, async (t) => {
    await ok(t, ['create', '-n', ns, '-f', '-'], { input: 'apiVersion: v1\nkind: Pod\nmetadata: {name: bound}\nspec:\n  nodeName: node-x\n  containers: [{name: c, image: nginx}]\n' });
    t.match(await ok(t, ['delete', 'pod', 'bound', '-n', ns, '--wait=false']), /pod "bound" deleted/);
    const p = await json(t, ['get', 'pod', 'bound', '-n', ns]);
    t.ok(p.metadata.deletionTimestamp, 'graceful deletion marks the pod');
    t.match(await ok(t, ['get', 'pod', 'bound', '-n', ns]), /Terminating/);
    const waiting = kc(['wait', '--for=delete', 'pod/bound', '-n', ns, '--timeout=20s']);
    await ok(t, ['delete', 'pod', 'bound', '-n', ns, '--grace-period=0', '--force']);
    const w = await waiting;
    t.equal(w.code, 0, `wait --for=delete: ${w.stderr}`);
    await ok(t, ['delete', 'deploy', 'web', '-n', ns]);
    t.equal((await kc(['get', 'deploy', 'web', '-n', ns])).code, 1);
    t.match(await ok(t, ['delete', 'namespace', ns, '--wait=false']), /deleted/);
    t.match(await ok(t, ['get', 'ns', ns]), /Terminating/);
  });
}
