// The log backend's other mode and format on a full API server: batch mode with json events
// rotated by size (--audit-log-maxsize=1 MB, --audit-log-maxbackup=2), and the legacy format in
// blocking mode; option errors stop the start with one line naming the option.
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { h2request, runExpectingStartFailure, startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { waitFor } from '../helpers/wait-for.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const dir = await mkdtemp(join(tmpdir(), 'audit-modes-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const policyFile = join(dir, 'policy.yaml');
await writeFile(policyFile, [
  'apiVersion: audit.k8s.io/v1', 'kind: Policy', 'rules:',
  '- level: None', '  users: ["system:apiserver"]',
  '- level: RequestResponse', '  namespaces: [big]', '  verbs: [create]', '  omitStages: [RequestReceived]',
  '- level: Metadata', '  namespaces: [legacy]',
  '- level: None', '',
].join('\n'));

async function tls(api: StartedApiserver) {
  return { ca: await readFile(api.caFile), cert: await readFile(api.clientCertFile), key: await readFile(api.clientKeyFile) };
}
async function post(api: StartedApiserver, path: string, obj: unknown) {
  const r = await h2request(api.url, { ...await tls(api), path, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(obj) });
  if (r.status !== 201) throw new Error(`${path}: ${r.status} ${r.body.slice(0, 200)}`);
  return r;
}

t.test('batch mode, json, rotated by size keeping two backups', async (t) => {
  const logDir = join(dir, 'batch');
  const api = await startApiserver({
    args: [`--audit-policy-file=${policyFile}`, `--audit-log-path=${join(logDir, 'audit.log')}`, '--audit-log-mode=batch',
      '--audit-log-batch-max-wait=50ms', '--audit-log-batch-max-size=4', '--audit-log-maxsize=1', '--audit-log-maxbackup=2'],
  });
  t.teardown(() => api.stop());
  await post(api, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'big' } });
  const ids: string[] = [];
  const data = { blob: 'x'.repeat(100 * 1024) };
  for (let i = 0; i < 30; i++) {
    const r = await post(api, '/api/v1/namespaces/big/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `c${i}` }, data });
    ids.push(r.headers['audit-id'] as string);
  }
  const read = async (): Promise<{ files: string[]; events: Any[] }> => {
    const files = (await readdir(logDir)).sort();
    const events: Any[] = [];
    // Oldest backup first, the current file last: names sort by their time.
    for (const f of [...files.filter((f) => f !== 'audit.log'), 'audit.log']) {
      for (const l of (await readFile(join(logDir, f), 'utf8')).split('\n').filter(Boolean)) events.push(JSON.parse(l));
    }
    return { files, events };
  };
  // The write of the last event may rotate the files right after it: the listing must also be
  // the same 200 ms later, or a backup named here may be gone when it is looked at.
  const { files, events } = await waitFor('the last create logged and the files settled', async () => {
    const r = await read();
    if (!r.events.some((e) => e.auditID === ids.at(-1))) return undefined;
    await new Promise((res) => setTimeout(res, 200));
    const again = await read();
    return again.files.join() === r.files.join() && again.events.length === r.events.length ? again : undefined;
  });
  t.equal(files.length, 3, `audit.log and two backups: ${files.join(' ')}`);
  for (const f of files) {
    t.match(f, /^audit(-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3})?\.log$/);
    t.ok((await stat(join(logDir, f))).size <= 1024 * 1024, `${f} within 1 MB`);
  }
  const kept = events.map((e) => e.auditID);
  t.ok(kept.length >= 8 && kept.length < 30, `older events rotated away (${kept.length} kept)`);
  t.same(kept, ids.slice(30 - kept.length), 'the kept events are the newest, in order, none missing');
  t.equal(events[0].requestObject.data.blob.length, 100 * 1024, 'RequestResponse objects logged whole');
  t.equal(events[0].responseObject.metadata.name, `c${30 - kept.length}`);
});

t.test('legacy format, blocking mode: the line is written before the answer arrives', async (t) => {
  const logFile = join(dir, 'legacy', 'audit.log');
  const api = await startApiserver({ args: [`--audit-policy-file=${policyFile}`, `--audit-log-path=${logFile}`, '--audit-log-format=legacy'] });
  t.teardown(() => api.stop());
  await post(api, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'legacy' } });
  const r = await post(api, '/api/v1/namespaces/legacy/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } });
  const id = r.headers['audit-id'] as string;
  const lines = (await readFile(logFile, 'utf8')).split('\n').filter((l) => l.includes(id));
  t.equal(lines.length, 2, 'both stages written already (blocking)');
  const q = (s: string) => JSON.stringify(s).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const common = ` AUDIT: id=${q(id)} stage="STAGE" ip="127.0.0.1" method="create" user="admin" groups=${q('"system:masters","system:authenticated"')} as="<self>" asgroups="<lookup>" user-agent="[^"]*" namespace="legacy" uri="/api/v1/namespaces/legacy/configmaps" response=`;
  t.match(lines[0], new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?Z${common.replace('STAGE', 'RequestReceived')}"<deferred>"$`));
  t.match(lines[1], new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?Z${common.replace('STAGE', 'ResponseComplete')}"201"$`));
});

t.test('option errors: one line naming the option', async (t) => {
  const bad = join(dir, 'bad.yaml');
  await writeFile(bad, 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n');
  const cases: [string[], RegExp][] = [
    [[`--audit-policy-file=${bad}`, `--audit-log-path=${join(dir, 'x.log')}`], /^apiserver: --audit-policy-file: .*bad\.yaml: rules\[0\]\.level: unsupported value "Loud"/],
    [[`--audit-policy-file=${join(dir, 'missing.yaml')}`], /^apiserver: --audit-policy-file: cannot read/],
    [[`--audit-policy-file=${policyFile}`, `--audit-log-path=${join(dir, 'y.log')}`, '--audit-log-mode=batch', '--audit-log-batch-max-size=0'], /^apiserver: --audit-log-batch-max-size: must be greater than 0/],
    [[`--audit-policy-file=${policyFile}`, `--audit-webhook-config-file=${join(dir, 'missing.yaml')}`], /^apiserver: --audit-webhook-config-file: /],
  ];
  for (const [args, want] of cases) {
    const { code, stderr } = await runExpectingStartFailure(args);
    t.not(code, 0, args.join(' '));
    const lines = stderr.trim().split('\n');
    t.equal(lines.length, 1, `one line: ${stderr}`);
    t.match(lines[0], want);
  }
});
