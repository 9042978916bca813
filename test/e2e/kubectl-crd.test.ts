/**
 * Real kubectl with CustomResourceDefinitions: apply a CRD, wait for Established, apply custom
 * resources twice with a change (client-side) and server-side, get with the printer columns
 * (and -o wide), explain from the published schema, patch (merge and json; strategic refused
 * as Kubernetes does), scale through the scale subresource, the schema's errors, then delete
 * the CRD and see its resources go. Runs with kubectl.1.33 and kubectl.1.27 when installed.
 */
import t, { type Test } from 'tap';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApiserver } from '../helpers/apiserver.js';
import { kubectl as kubectlBinary } from '../helpers/kubectl.js';
import { kubectlRunner } from '../helpers/kubectl-run.js';

const binaries = [33, 27].map(kubectlBinary).filter((x): x is string => !!x);
if (!binaries.length) t.comment('no versioned kubectl installed: nothing to run');

const a = binaries.length ? await startApiserver() : undefined;
const work = await mkdtemp(join(tmpdir(), 'corectl-kubectl-crd-'));
t.teardown(async () => { await a?.stop(); await rm(work, { recursive: true, force: true }); });


const crd = (group: string): string => `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.${group}
spec:
  group: ${group}
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, shortNames: [ct]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns:
    - {name: Spec, type: string, jsonPath: .spec.cronSpec, description: the schedule}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Image, type: string, jsonPath: .spec.image, priority: 1}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What the cron tab runs, and when.
            required: [cronSpec]
            properties:
              cronSpec: {type: string, description: A cron schedule.}
              image: {type: string}
              replicas: {type: integer, minimum: 1, default: 1}
          status:
            type: object
            properties:
              replicas: {type: integer}
`;

for (const bin of binaries) {
  const ver = bin.split('/').pop()!;
  const group = `${ver.replace(/\W/g, '')}.example.com`;
  const cacheDir = join(work, `cache-${ver}`);
  const { run: kc, ok, json } = kubectlRunner(bin, a!.coreconfigPath, cacheDir);
  const ct = (spec: string): string => `apiVersion: ${group}/v1\nkind: CronTab\nmetadata: {name: nightly, namespace: default}\nspec: ${spec}\n`;

  t.test(`${ver}: CRD applied and established`, async (t) => {
    t.match(await ok(t, ['apply', '-f', '-'], crd(group)), /customresourcedefinition.apiextensions.k8s.io\/crontabs\..* created/);
    await ok(t, ['wait', '--for=condition=established', `crd/crontabs.${group}`, '--timeout=20s']);
    t.match(await ok(t, ['get', 'crd']), new RegExp(`^crontabs\\.${group.replace(/\./g, '\\.')}\\s+\\d{4}-`, 'm'));
    t.match(await ok(t, ['api-resources', `--api-group=${group}`]), new RegExp(`^crontabs\\s+ct\\s+${group}/v1\\s+true\\s+CronTab$`, 'm'));
  });

  t.test(`${ver}: custom resources applied, listed, explained`, async (t) => {
    t.match(await ok(t, ['apply', '-f', '-'], ct('{cronSpec: "*/5 * * * *", image: a}')), /nightly created/);
    t.match(await ok(t, ['apply', '-f', '-'], ct('{cronSpec: "*/10 * * * *", image: a}')), /nightly configured/);
    const o = await json(t, ['get', `crontabs.${group}`, 'nightly']);
    t.equal(o.spec.cronSpec, '*/10 * * * *');
    t.equal(o.spec.replicas, 1, 'schema default');
    const table = await ok(t, ['get', `crontabs.${group}`]);
    t.match(table, /^NAME\s+SPEC\s+REPLICAS$/m);
    t.match(table, /^nightly\s+\*\/10 \* \* \* \*\s+1$/m);
    t.match(await ok(t, ['get', `ct.${group}`, '-o', 'wide']), /^nightly\s+\*\/10 \* \* \* \*\s+1\s+a$/m);
    t.equal(await ok(t, ['get', `crontabs.${group}`, 'nightly', '-o', 'jsonpath={.spec.image}']), 'a');
    const explained = await ok(t, ['explain', `crontabs.${group}.spec`]);
    t.match(explained, /What the cron tab runs, and when\./);
    t.match(explained, /cronSpec\s+<string>.*-required-/s);
    t.match(await ok(t, ['apply', '--server-side', '-f', '-'], ct('{cronSpec: "0 * * * *", image: b}')), /nightly serverside-applied/);
    t.equal((await json(t, ['get', `crontabs.${group}`, 'nightly'])).spec.image, 'b');
  });

  t.test(`${ver}: patch, scale, and the schema's errors`, async (t) => {
    await ok(t, ['patch', `crontabs.${group}`, 'nightly', '--type=merge', '-p', '{"spec":{"image":"c"}}']);
    await ok(t, ['patch', `crontabs.${group}`, 'nightly', '--type=json', '-p', '[{"op":"replace","path":"/spec/cronSpec","value":"1 * * * *"}]']);
    const sm = await kc(['patch', `crontabs.${group}`, 'nightly', '-p', '{"spec":{"image":"d"}}']);
    t.not(sm.code, 0, 'strategic merge patch is refused');
    t.match(sm.stderr, /application\/strategic-merge-patch\+json is not supported/);
    await ok(t, ['scale', `crontabs.${group}`, 'nightly', '--replicas=4']);
    const o = await json(t, ['get', `crontabs.${group}`, 'nightly']);
    t.match(o.spec, { image: 'c', cronSpec: '1 * * * *', replicas: 4 });
    const bad = await kc(['apply', '-f', '-'], ct('{cronSpec: "x", replicas: 0}'));
    t.not(bad.code, 0);
    t.match(bad.stderr, /spec\.replicas: Invalid value: 0: spec\.replicas in body should be greater than or equal to 1/);
    const unknown = await kc(['apply', '-f', '-'], ct('{cronSpec: "x", colour: red}'));
    t.not(unknown.code, 0, 'strict validation (kubectl default) refuses an unknown field');
    t.match(unknown.stderr, /unknown field "spec.colour"/);
  });

  t.test(`${ver}: deleting the CRD deletes its resources`, async (t) => {
    await ok(t, ['delete', 'crd', `crontabs.${group}`, '--wait=true', '--timeout=30s']);
    const gone = await kc(['get', `crontabs.${group}`]);
    t.not(gone.code, 0);
    t.match(gone.stderr, /the server doesn't have a resource type|could not find the requested resource/);
  });
}
