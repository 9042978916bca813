// A committed write is answered as a success, over HTTP/1.1 and HTTP/2: warnings whose text
// holds characters outside Latin-1 (an unknown field's name) are encoded as Kubernetes encodes
// them instead of making the header write throw after the commit, and a failure injected after
// the commit (writeFailpoints.afterCommit) still gives the client the written object.
import { readFile } from 'node:fs/promises';
import * as https from 'node:https';
import t from 'tap';
import { writeFailpoints } from '../../src/daemons/apiserver/rest/committed-answer.js';
import { startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { connectClient, type RestClient } from '../helpers/rest-client.js';

interface Answer { status: number; warnings: string[]; json: Record<string, any> | undefined } // eslint-disable-line @typescript-eslint/no-explicit-any

/** Header bytes as UTF-8 text (Node's clients hand header bytes over one character per byte). */
const utf8Of = (v: string): string => Buffer.from(v, 'latin1').toString('utf8');

function warningsOf(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).map(utf8Of);
}

async function http1Client(a: StartedApiserver): Promise<(method: string, path: string, body?: Buffer, contentType?: string) => Promise<Answer>> {
  const [ca, cert, key] = await Promise.all([readFile(a.caFile), readFile(a.clientCertFile), readFile(a.clientKeyFile)]);
  const agent = new https.Agent({ ca, cert, key, keepAlive: true });
  t.teardown(() => agent.destroy());
  return (method, path, body, contentType = 'application/json') => new Promise<Answer>((resolve, reject) => {
    const req = https.request(`${a.url}${path}`, { method, agent, headers: body ? { 'content-type': contentType, 'content-length': String(body.length) } : {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: Answer['json'];
        try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
        // Node joins repeated headers with ', ' in `headers`; rawHeaders keeps each one.
        const warnings: string[] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) if (res.rawHeaders[i]!.toLowerCase() === 'warning') warnings.push(utf8Of(res.rawHeaders[i + 1]!));
        resolve({ status: res.statusCode ?? 0, warnings, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(20_000, () => req.destroy(new Error(`timeout: ${method} ${path}`)));
    req.end(body);
  });
}

function http2Request(c: RestClient): (method: string, path: string, body?: Buffer, contentType?: string) => Promise<Answer> {
  return async (method, path, body, contentType = 'application/json') => {
    const r = await c.request(method, path, body ? { raw: body, contentType } : {});
    return { status: r.status, warnings: warningsOf(r.headers.warning as string | string[] | undefined), json: r.json };
  };
}

const a = await startApiserver();
const c = await connectClient(a);
t.teardown(async () => { c.close(); await a.stop(); });
const h1 = await http1Client(a);
const h2 = http2Request(c);
const base = '/api/v1/namespaces/default/configmaps';

for (const [proto, send] of [['HTTP/1.1', h1], ['HTTP/2', h2]] as const) {
  const tag = proto === 'HTTP/1.1' ? 'h1' : 'h2';

  t.test(`${proto}: unknown field names outside Latin-1 are warned about, and the write answers success`, async (t) => {
    // '€' is outside Latin-1; 0xff is not UTF-8 at all (the decoder reads it as U+FFFD, as Go's does).
    const body = Buffer.concat([
      Buffer.from(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w-${tag}"},"data":{"a":"1"},"bogus€":1,"bad`),
      Buffer.from([0xff]), Buffer.from('":2,"quote\\"back\\\\slash":3,"new\\nline":4}'),
    ]);
    const created = await send('POST', base, body);
    t.equal(created.status, 201, 'the create answers 201');
    // (Node's HTTP/2 client joins repeated headers with ', ': compared joined.)
    t.equal(created.warnings.join(', '), [
      '299 - "unknown field \\"bogus€\\""',
      '299 - "unknown field \\"bad\ufffd\\""',
      '299 - "unknown field \\"quote\\\\\\"back\\\\\\\\slash\\""',
      '299 - "unknown field \\"new\\\\nline\\""',
    ].join(', '), 'field paths quoted as Go quotes them; warnings go out as UTF-8 with only " and \\ escaped, in order');
    const update = await send('PUT', `${base}/w-${tag}`, body);
    t.equal(update.status, 200, 'a later update with the same fields answers 200');
    t.equal(update.warnings.join(', '), created.warnings.join(', '), 'and warns again');
    const patch = await send('PATCH', `${base}/w-${tag}`, Buffer.from('{"data":{"b":"2"},"ünknown":1}'), 'application/merge-patch+json');
    t.equal(patch.status, 200, 'a merge patch with such a field answers 200');
    t.equal(patch.warnings.join(', '), '299 - "unknown field \\"ünknown\\""');
    const applied = await send('PATCH', `${base}/w-${tag}?fieldManager=t`, Buffer.from(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w-${tag}"},"日本":1}`), 'application/apply-patch+yaml');
    t.equal(applied.status, 200, 'an apply with such a field answers 200');
    t.equal(applied.warnings.join(', '), '299 - "unknown field \\"日本\\""');
  });

  t.test(`${proto}: a failure after the commit still answers with the written object`, async (t) => {
    let hits = 0;
    writeFailpoints.afterCommit = () => { hits++; throw new Error('injected after commit'); };
    t.teardown(() => { writeFailpoints.afterCommit = undefined; });
    const cm = (data: Record<string, string>): Buffer => Buffer.from(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `f-${tag}` }, data }));
    const created = await send('POST', base, cm({ a: '1' }));
    t.equal(created.status, 201, 'create: 201');
    t.equal(created.json?.kind, 'ConfigMap', 'create: the object, not a Status');
    t.same(created.json?.data, { a: '1' });
    t.ok(created.json?.metadata?.resourceVersion, 'create: the written resourceVersion');
    const updated = await send('PUT', `${base}/f-${tag}`, cm({ a: '2' }));
    t.equal(updated.status, 200, 'update: 200');
    t.same(updated.json?.data, { a: '2' });
    const patched = await send('PATCH', `${base}/f-${tag}`, Buffer.from('{"data":{"b":"3"}}'), 'application/merge-patch+json');
    t.equal(patched.status, 200, 'patch: 200');
    t.same(patched.json?.data, { a: '2', b: '3' });
    const viaApply = await send('PATCH', `${base}/f2-${tag}?fieldManager=t`, Buffer.from(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"f2-${tag}"},"data":{"x":"1"}}`), 'application/apply-patch+yaml');
    t.equal(viaApply.status, 201, 'apply creating: 201');
    // Subresource writes: a namespace's finalize, a deployment's scale.
    const ns = `fin-${tag}`;
    writeFailpoints.afterCommit = undefined;
    t.equal((await send('POST', '/api/v1/namespaces', Buffer.from(JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } })))).status, 201);
    const dep = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: `d-${tag}` }, spec: { replicas: 1, selector: { matchLabels: { app: 'd' } }, template: { metadata: { labels: { app: 'd' } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } } } };
    t.equal((await send('POST', '/apis/apps/v1/namespaces/default/deployments', Buffer.from(JSON.stringify(dep)))).status, 201);
    writeFailpoints.afterCommit = () => { hits++; throw new Error('injected after commit'); };
    const fin = await send('PUT', `/api/v1/namespaces/${ns}/finalize`, Buffer.from(JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns }, spec: { finalizers: ['kubernetes'] } })));
    t.equal(fin.status, 200, 'finalize: 200');
    t.equal(fin.json?.kind, 'Namespace', 'finalize: the namespace');
    const scale = await send('PUT', `/apis/apps/v1/namespaces/default/deployments/d-${tag}/scale`, Buffer.from(JSON.stringify({ apiVersion: 'autoscaling/v1', kind: 'Scale', metadata: { name: `d-${tag}` }, spec: { replicas: 3 } })));
    t.equal(scale.status, 200, 'scale: 200');
    t.match(scale.json, { kind: 'Scale', spec: { replicas: 3 } }, 'scale: the Scale');
    t.equal(hits, 6, 'the failpoint fired after every commit');
    writeFailpoints.afterCommit = undefined;
    const read = await send('GET', `${base}/f-${tag}`);
    t.same(read.json?.data, { a: '2', b: '3' }, 'what the answers said is what is stored');
    t.equal(read.json?.metadata?.resourceVersion, patched.json?.metadata?.resourceVersion);
  });
}
