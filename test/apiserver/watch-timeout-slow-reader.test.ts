// timeoutSeconds ends a watch even when its client reads slowly: what the server still holds for
// that client is dropped at the timeout, not drained first (a back-pressured watch with a
// 10 s timeout used to run for as long as the client took to read its buffer). Each client
// watches from before many large writes, so the replay alone fills every buffer, and reads
// nothing until the server has ended the watch; then it reads what it can. Over HTTP/2 and
// HTTP/1.1 (push delivery: without the fix each got all its events, the response lived until
// they were read) and WebSocket (one event at a time, so little is ever buffered; checked alike).
import t, { type Test } from 'tap';
import { readFile } from 'node:fs/promises';
import * as http2 from 'node:http2';
import * as https from 'node:https';
import { WebSocket } from 'ws';
import { startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { connectClient, eventually } from '../helpers/rest-client.js';
import type { ObjectStore } from '../../src/storage/object-store-types.js';
import type { ObjectStoreInternals } from '../../src/storage/object-store.js';

const EVENTS = 120;
const VALUE = 'x'.repeat(64 * 1024);
const NS = 'slow';
const base = `/api/v1/namespaces/${NS}/configmaps`;

let a: StartedApiserver;
let startRv: string;
/** The API server's own watchers of configmaps. */
let ownWatchers = 0;
let creds: { ca: Buffer; cert: Buffer; key: Buffer };

t.before(async () => {
  a = await startApiserver({});
  creds = await Promise.all([readFile(a.caFile), readFile(a.clientCertFile), readFile(a.clientKeyFile)]).then(([ca, cert, key]) => ({ ca, cert, key }));
  const c = await connectClient(a);
  await c.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } } });
  startRv = (await c.request('GET', base)).json.metadata.resourceVersion;
  for (let i = 0; i < EVENTS; i += 10) {
    await Promise.all(Array.from({ length: 10 }, (_, j) =>
      c.request('POST', base, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `big-${i + j}` }, data: { v: VALUE } } })));
  }
  c.close();
  ownWatchers = (a.parts!.store as ObjectStore & ObjectStoreInternals).watchCacheFor('', 'configmaps')!.watcherCount;
});
t.teardown(() => a.stop());

const watchPath = (): string => `${base}?watch=true&resourceVersion=${startRv}&timeoutSeconds=1`;

/**
 * Waits until the server has this client's watcher, then until it is gone: the timeout fired.
 * (The server's own configmap watchers, such as the one keeping
 * extension-apiserver-authentication, are counted apart.)
 */
async function serverEnded(): Promise<void> {
  const cache = (a.parts!.store as ObjectStore & ObjectStoreInternals).watchCacheFor('', 'configmaps')!;
  await eventually(async () => cache.watcherCount > ownWatchers, 10_000);
  await eventually(async () => cache.watcherCount === ownWatchers, 20_000);
}

/** Lines in `text` (events: one JSON object per line). */
const lines = (text: string): number => text.split('\n').filter((l) => l.length > 0).length;

async function check(t: Test, read: () => Promise<number>): Promise<void> {
  const got = await read();
  t.ok(got < EVENTS, `the client read ${got} of ${EVENTS} events: the rest was dropped at the timeout`);
}

t.test('HTTP/2', { timeout: 60_000 }, async (t) => {
  const session = http2.connect(a.url, creds);
  t.teardown(() => session.close());
  const req = session.request({ ':path': watchPath(), accept: 'application/json' });
  req.pause();
  // The stream may close (a reset) while paused: listen from the start.
  const closed = new Promise<void>((resolve) => { req.once('close', () => resolve()); req.on('error', () => undefined); });
  await new Promise<void>((resolve) => req.once('response', () => resolve()));
  await serverEnded();
  await check(t, async () => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => { text += c; });
    req.resume();
    await closed;
    return lines(text);
  });
});

t.test('HTTP/1.1', { timeout: 60_000 }, async (t) => {
  let text = '';
  let closed!: Promise<void>;
  let response!: import('node:http').IncomingMessage;
  const req = https.get(`${a.url}${watchPath()}`, { ...creds, agent: false, headers: { accept: 'application/json' } }, (res) => {
    res.pause();
    res.setEncoding('utf8');
    res.on('data', (c: string) => { text += c; });
    closed = new Promise<void>((resolve) => { res.once('close', () => resolve()); res.on('error', () => undefined); });
  });
  req.on('error', () => undefined);
  t.teardown(() => req.destroy());
  await new Promise<void>((resolve) => req.once('response', (res) => { response = res; resolve(); }));
  await serverEnded();
  await check(t, async () => {
    response.resume();
    await closed;
    return lines(text);
  });
});

t.test('WebSocket', { timeout: 60_000 }, async (t) => {
  const ws = new WebSocket(a.url.replace('https://', 'wss://') + watchPath(), creds);
  t.teardown(() => ws.terminate());
  let got = 0;
  ws.on('message', () => { got++; });
  ws.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => { ws.once('open', () => resolve()); ws.once('error', reject); });
  ws.pause();
  await serverEnded();
  await check(t, async () => {
    ws.resume();
    await closed;
    return got;
  });
});
