// The write path's body reading (limits, chunking, aborted requests) over real HTTP/2, and the
// registry's update without copies: a retried write gets a new object from `mutate` each time.
import t from 'tap';
import * as http2 from 'node:http2';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readBody } from '../../src/daemons/apiserver/rest/http-io.js';
import { H2Request } from '../../src/daemons/apiserver/h2-request.js';
import { H2Response } from '../../src/daemons/apiserver/h2-response.js';
import { isApiError } from '../../src/api/meta/status.js';
import { findResource } from '../../src/api/resources/registry.js';
import type { KubeObject } from '../../src/api/resources/types.js';
import { openLevelBackend } from '../../src/storage/leveldb/level-backend.js';
import { createObjectStore } from '../../src/storage/object-store.js';
import { ResourceRegistry } from '../../src/daemons/apiserver/registry/resource-registry.js';

interface Outcome { status: number; body: string; serverSaw: string }

/** A bare HTTP/2 server whose handler reads the body with readBody(limit) and reports. */
async function bodyServer(limit: number): Promise<{ send(chunks: Buffer[], headers?: http2.OutgoingHttpHeaders): Promise<Outcome>; abort(): Promise<string>; close(): Promise<void> }> {
  let lastSeen = '';
  let seenWaiter: ((s: string) => void) | undefined;
  const server = http2.createServer();
  // The API server's own HTTP/2 request/response pair (server.ts), not Node's compat layer.
  server.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    const req = new H2Request(stream, headers);
    const res = new H2Response(stream);
    readBody(req, limit).then((b) => {
      lastSeen = `body ${b.length}`;
      res.statusCode = 200;
      res.end(b);
    }, (e: unknown) => {
      lastSeen = isApiError(e) ? `api ${e.code}` : `error ${(e as { code?: string }).code ?? String(e)}`;
      if (!res.headersSent && !res.stream.destroyed) { res.statusCode = isApiError(e) ? e.code : 500; res.end(lastSeen); }
    }).finally(() => seenWaiter?.(lastSeen));
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => { sessions.add(s); s.on('close', () => sessions.delete(s)); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => undefined);
  return {
    send(chunks, headers = {}) {
      return new Promise<Outcome>((resolve, reject) => {
        const req = session.request({ ':method': 'POST', ':path': '/', ...headers });
        let status = 0;
        const got: Buffer[] = [];
        req.on('response', (h) => { status = Number(h[':status']); });
        req.on('data', (c: Buffer) => got.push(c));
        req.on('error', () => undefined);
        req.on('close', () => resolve({ status, body: Buffer.concat(got).toString(), serverSaw: lastSeen }));
        req.setTimeout(10_000, () => { req.close(); reject(new Error('timeout')); });
        const write = (i: number): void => {
          if (i === chunks.length) { req.end(); return; }
          // Past the limit the server stops reading: stop writing too once it has answered.
          if (status !== 0) { req.close(); return; }
          req.write(chunks[i], () => setImmediate(() => write(i + 1)));
        };
        write(0);
      });
    },
    abort() {
      return new Promise<string>((resolve) => {
        seenWaiter = (s) => { seenWaiter = undefined; resolve(s); };
        const req = session.request({ ':method': 'POST', ':path': '/' });
        req.on('error', () => undefined);
        req.write(Buffer.from('{"partial":'), () => setTimeout(() => req.close(http2.constants.NGHTTP2_CANCEL), 50));
      });
    },
    async close() {
      session.destroy();
      for (const s of sessions) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

t.test('request bodies: chunks, limits, empty and aborted requests', async (t) => {
  const srv = await bodyServer(1000);
  t.teardown(() => srv.close());

  const one = await srv.send([Buffer.from('{"a":1}')]);
  t.same([one.status, one.body, one.serverSaw], [200, '{"a":1}', 'body 7']);

  const parts = [Buffer.from('{"a":'), Buffer.from('"'.padEnd(200, 'x')), Buffer.from('"}')];
  const many = await srv.send(parts);
  t.equal(many.status, 200);
  t.equal(many.body, Buffer.concat(parts).toString(), 'chunks joined in order');

  const empty = await srv.send([]);
  t.same([empty.status, empty.body], [200, ''], 'an empty body is an empty buffer');

  const declared = await srv.send([Buffer.alloc(10)], { 'content-length': '5000' });
  t.same([declared.status, declared.serverSaw], [413, 'api 413'], 'a declared length past the limit is refused before reading');

  const streamed = await srv.send(Array.from({ length: 8 }, () => Buffer.alloc(300, 0x61)));
  t.same([streamed.status, streamed.serverSaw], [413, 'api 413'], 'a body growing past the limit is refused while reading');
  t.equal(streamed.body, 'api 413', 'and the answer still reaches the client');

  // A reset request stream closes: the reader settles (with what arrived, or refusing the
  // short body) instead of waiting forever.
  t.match(await srv.abort(), /^(body 11|error .*)$/, 'a request reset before its end settles');
});

t.test('update: mutate runs again with a new object when the write is retried', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-writepath-'));
  const backend = await openLevelBackend({ dir });
  const store = createObjectStore({ backendFor: () => backend, watchCache: { enabled: true, defaultSize: 100, sizes: {} } });
  t.teardown(async () => { await store.close(); await backend.close(); await rm(dir, { recursive: true, force: true }); });
  const registry = new ResourceRegistry(store, { repairMalformedUpdates: true });
  const nsDef = findResource('', 'v1', 'namespaces')!;
  const cmDef = findResource('', 'v1', 'configmaps')!;
  await registry.create(nsDef, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns' } });
  await registry.create(cmDef, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'ns' }, data: { v: '0' } });

  // As handleUpdate does: every call builds the desired object anew (no resourceVersion: an
  // unconditional PUT). The first call also writes concurrently, so the first attempt conflicts.
  const handedOut: KubeObject[] = [];
  let calls = 0;
  const { object } = await registry.update(cmDef, 'ns', 'cm', async (cur) => {
    calls++;
    t.equal(cur?.metadata?.name, 'cm');
    if (calls === 1) {
      await registry.update(cmDef, 'ns', 'cm', (c) => ({ ...c!, data: { v: 'concurrent' } }));
    }
    const o: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'ns' }, data: { v: 'mine' } };
    handedOut.push(o);
    return o;
  }, { mutateReadsCurrent: true, mutateReturnsFresh: true });
  t.ok(calls >= 2, 'the conflicting first attempt was retried');
  t.equal(new Set(handedOut).size, handedOut.length, 'a new object each time');
  t.same(object.data, { v: 'mine' });
  t.equal(object.metadata?.generation, undefined);
  const stored = await registry.get(cmDef, 'ns', 'cm');
  t.same(stored.data, { v: 'mine' });
  t.equal(stored.metadata?.resourceVersion, object.metadata?.resourceVersion);

  // A stale resourceVersion is still a conflict, however the object is handed over.
  await t.rejects(registry.update(cmDef, 'ns', 'cm', () => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'ns', resourceVersion: '1' }, data: {} }),
    { mutateReadsCurrent: true, mutateReturnsFresh: true }), { code: 409 });
});
