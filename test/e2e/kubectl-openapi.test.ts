// kubectl against a started API server: create/apply with default (strict) validation, which
// needs the OpenAPI documents (v3 for 1.33, protobuf v2 for 1.27), and `kubectl explain`.
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { h2request, startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { OpenApiHandler, withOpenApi } from '../../src/daemons/apiserver/rest/openapi-handler.js';
import type { ApiRequest, ApiResponse } from '../../src/daemons/apiserver/context.js';
import { kubectl as kubectlBinary } from '../helpers/kubectl.js';

/** Records what was asked of it (only when this test installs it). */
class RecordingOpenApiHandler extends OpenApiHandler {
  readonly seen: { path: string; accept: string }[] = [];
  override serve(req: ApiRequest, res: ApiResponse, path: string, query: URLSearchParams): void {
    this.seen.push({ path, accept: String(req.headers['accept'] ?? '') });
    super.serve(req, res, path, query);
  }
}

function findKubectl(v: string): string | undefined {
  return kubectlBinary(Number(v.split('.')[1]));
}
const k133 = findKubectl('1.33');
const k127 = findKubectl('1.27');

interface Run { code: number; stdout: string; stderr: string }

t.test('kubectl with OpenAPI', { skip: k133 && k127 ? false : 'kubectl.1.33/1.27 not installed' }, async (t) => {
  const s: StartedApiserver = await startApiserver();
  t.teardown(() => s.stop());
  // Until the serving chain routes /openapi itself, put the handler in front of the REST layer.
  const probe = await h2request(s.url, { path: '/openapi/v3', ca: s.ca.certPem, cert: await readFile(s.clientCertFile), key: await readFile(s.clientKeyFile) });
  let recorder: RecordingOpenApiHandler | undefined;
  if (probe.status === 404 && s.parts?.rest) withOpenApi(s.parts.rest, recorder = new RecordingOpenApiHandler());

  let n = 0;
  const kubectl = (bin: string, args: string[], stdin?: string): Promise<Run> => new Promise((resolve) => {
    const cache = join(s.dir, `kcache-${n++}`);
    const child = execFile(bin, [...args, '--kubeconfig', s.coreconfigPath, '--cache-dir', cache], { timeout: 40_000 },
      (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
    if (stdin !== undefined) child.stdin?.end(stdin);
  });

  const pod = (name: string, extra = ''): string => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  namespace: default
spec:
  containers:
  - name: c
    image: busybox
${extra}`;
  const f1 = join(s.dir, 'pod1.yaml');
  await writeFile(f1, pod('p1'));
  let r = await kubectl(k133!, ['create', '-f', f1]);
  t.equal(r.code, 0, `1.33 create: ${r.stderr}`);
  t.match(r.stdout, /pod\/p1 created/);

  const bad = join(s.dir, 'bad.yaml');
  await writeFile(bad, pod('p2', '    bogus: 1\n'));
  r = await kubectl(k133!, ['create', '-f', bad]);
  t.not(r.code, 0, '1.33 create with an unknown field fails (strict)');
  t.match(r.stderr, /unknown field "spec\.containers\[0\]\.bogus"/);

  const deploy = (replicas: number, image: string): string => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: d1
  namespace: default
spec:
  replicas: ${replicas}
  selector:
    matchLabels: {app: d1}
  template:
    metadata:
      labels: {app: d1}
    spec:
      containers:
      - name: c
        image: ${image}
        ports:
        - containerPort: 80
`;
  const fd = join(s.dir, 'deploy.yaml');
  await writeFile(fd, deploy(1, 'nginx:1.25'));
  r = await kubectl(k133!, ['apply', '-f', fd]);
  t.equal(r.code, 0, `1.33 apply (create): ${r.stderr}`);
  await writeFile(fd, deploy(2, 'nginx:1.26'));
  r = await kubectl(k133!, ['apply', '-f', fd]);
  t.equal(r.code, 0, `1.33 apply (patch): ${r.stderr}`);
  t.match(r.stdout, /deployment.apps\/d1 configured/);

  // kubectl 1.27 reads only the protobuf v2 document.
  await writeFile(fd, deploy(3, 'nginx:1.27'));
  r = await kubectl(k127!, ['apply', '-f', fd]);
  t.equal(r.code, 0, `1.27 apply (patch): ${r.stderr}`);
  const f3 = join(s.dir, 'pod3.yaml');
  await writeFile(f3, pod('p3'));
  r = await kubectl(k127!, ['apply', '-f', f3]);
  t.equal(r.code, 0, `1.27 apply (create): ${r.stderr}`);
  r = await kubectl(k127!, ['get', 'deployment', 'd1', '-o', 'jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].ports[0].containerPort}']);
  t.equal(r.stdout, '3 nginx:1.27 80', `state after 1.27 apply: ${r.stderr}`);

  r = await kubectl(k133!, ['explain', 'pod.spec.containers']);
  t.equal(r.code, 0, `1.33 explain: ${r.stderr}`);
  t.match(r.stdout, /KIND:\s+Pod/);
  t.match(r.stdout, /image\s+<string>/);
  t.match(r.stdout, /ports\s+<\[\]ContainerPort>/);

  r = await kubectl(k127!, ['explain', 'pod.spec.containers']);
  t.equal(r.code, 0, `1.27 explain: ${r.stderr}`);
  t.match(r.stdout, /KIND:\s+Pod/);
  t.match(r.stdout, /image\s+<string>/);

  r = await kubectl(k127!, ['create', '-f', bad]);
  t.not(r.code, 0, '1.27 create with an unknown field fails');
  t.match(r.stderr, /unknown field "spec\.containers\[0\]\.bogus"/);

  // Every kubectl.1.NN on this machine creates with default validation.
  for (let minor = 27; minor <= 33; minor++) {
    const bin = findKubectl(`1.${minor}`);
    if (!bin) continue;
    const f = join(s.dir, `pod-${minor}.yaml`);
    await writeFile(f, pod(`v${minor}`));
    r = await kubectl(bin, ['apply', '-f', f]);
    t.equal(r.code, 0, `kubectl 1.${minor} apply: ${r.stderr}`);
  }

  if (recorder) {
    t.ok(recorder.seen.some((x) => x.path === '/openapi/v2' && x.accept.includes('com.github.proto-openapi.spec.v2')), 'kubectl 1.27 read the protobuf v2 document');
    t.ok(recorder.seen.some((x) => x.path === '/openapi/v3/api/v1'), 'kubectl 1.33 read the core v3 document');
    t.ok(recorder.seen.some((x) => x.path === '/openapi/v3/apis/apps/v1'), 'kubectl 1.33 read the apps v3 document');
  }
});
