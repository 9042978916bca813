// The API server's own feature gates: APIListChunking (on by default; off, `limit` and
// `continue` are ignored and every list is whole) and APIResponseCompression (off by default;
// on, a response body over 128 KiB goes gzip-compressed, level 1, to a client whose
// Accept-Encoding takes gzip, with Content-Encoding and Vary headers, as Kubernetes does).
import t from 'tap';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import https from 'node:https';
import { gunzipSync } from 'node:zlib';
import { startApiserver } from '../helpers/apiserver.js';
import { kubectl as findKubectl } from '../helpers/kubectl.js';
import { connectClient } from '../helpers/rest-client.js';

const CMS = '/api/v1/namespaces/default/configmaps';
const cm = (name: string, bytes = 0): Record<string, unknown> => ({
  apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels: { set: 'gates' } }, data: { v: 'x'.repeat(bytes) },
});

const on = await startApiserver({ args: ['--feature-gates=APIListChunking=false,APIResponseCompression=true'] });
const off = await startApiserver();
const con = await connectClient(on);
const coff = await connectClient(off);
t.teardown(async () => { con.close(); coff.close(); await Promise.all([on.stop(), off.stop()]); });

t.before(async () => {
  for (const c of [con, coff]) {
    for (const body of [cm('small-0'), cm('small-1'), cm('small-2'), cm('big', 200 * 1024)]) {
      const r = await c.request('POST', CMS, { body });
      if (r.status !== 201) throw new Error(`create ${String((body.metadata as { name: string }).name)}: HTTP ${r.status}`);
    }
  }
});

t.test('APIListChunking=false: limit and continue are ignored', async (t) => {
  const whole = await con.request('GET', `${CMS}?labelSelector=set%3Dgates&limit=1`);
  t.equal(whole.status, 200);
  t.equal(whole.json.items.length, 4, 'every item, in one list');
  t.notOk(whole.json.metadata.continue, 'no continue token');
  const withToken = await con.request('GET', `${CMS}?labelSelector=set%3Dgates&limit=1&continue=bogus`);
  t.equal(withToken.status, 200, 'a continue token is not even read');
  t.equal(withToken.json.items.length, 4);

  const paged = await coff.request('GET', `${CMS}?labelSelector=set%3Dgates&limit=1`);
  t.equal(paged.json.items.length, 1, 'by default, pages');
  t.ok(paged.json.metadata.continue);
});

t.test('APIResponseCompression=true: large bodies go gzip-compressed to clients that accept it', async (t) => {
  const big = await con.request('GET', `${CMS}/big`, { headers: { 'accept-encoding': 'gzip' } });
  t.equal(big.status, 200);
  t.equal(big.headers['content-encoding'], 'gzip');
  t.equal(big.headers['vary'], 'Accept-Encoding');
  t.equal(Number(big.headers['content-length']), big.body.length, 'Content-Length is the compressed size');
  t.ok(big.body.length < 10 * 1024, `compressed: ${big.body.length} bytes`);
  const obj = JSON.parse(gunzipSync(big.body).toString('utf8'));
  t.equal(obj.metadata.name, 'big');
  t.equal(obj.data.v.length, 200 * 1024);

  const list = await con.request('GET', CMS, { headers: { 'accept-encoding': 'deflate, gzip;q=0.5' } });
  t.equal(list.headers['content-encoding'], 'gzip', 'lists too');
  t.equal(JSON.parse(gunzipSync(list.body).toString('utf8')).items.length, 4);

  const plain = await con.request('GET', `${CMS}/big`);
  t.equal(plain.headers['content-encoding'], undefined, 'no Accept-Encoding: plain');
  t.equal(plain.json.data.v.length, 200 * 1024);
  const refused = await con.request('GET', `${CMS}/big`, { headers: { 'accept-encoding': 'gzip;q=0, deflate' } });
  t.equal(refused.headers['content-encoding'], undefined, 'gzip;q=0 refuses it');
  const small = await con.request('GET', `${CMS}/small-0`, { headers: { 'accept-encoding': 'gzip' } });
  t.equal(small.headers['content-encoding'], undefined, 'at most 128 KiB: plain');
  t.equal(small.json.metadata.name, 'small-0');

  const gateOff = await coff.request('GET', `${CMS}/big`, { headers: { 'accept-encoding': 'gzip' } });
  t.equal(gateOff.headers['content-encoding'], undefined, 'the gate is off by default');
  t.equal(gateOff.json.data.v.length, 200 * 1024);
});

t.test('HTTP/1.1 clients get the same', async (t) => {
  const [ca, cert, key] = await Promise.all([readFile(on.caFile), readFile(on.clientCertFile), readFile(on.clientKeyFile)]);
  const r = await new Promise<{ headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
    const req = https.get(`${on.url}${CMS}/big`, { ca, cert, key, headers: { 'accept-encoding': 'gzip', accept: 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
  });
  t.equal(r.headers['content-encoding'], 'gzip');
  t.equal(JSON.parse(gunzipSync(r.body).toString('utf8')).data.v.length, 200 * 1024);
});

t.test('kubectl reads compressed responses', { skip: findKubectl(33) ? false : 'kubectl.1.33 not installed' }, async (t) => {
  const out = await new Promise<string>((resolve, reject) => {
    execFile(findKubectl(33)!, ['--kubeconfig', on.coreconfigPath, 'get', 'configmap', 'big', '-o', 'jsonpath={.data.v}'], { maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(stderr || err.message)); else resolve(stdout);
    });
  });
  t.equal(out.length, 200 * 1024, 'the whole value, decompressed by the Go client');
});
