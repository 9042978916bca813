/**
 * A small extension API server for aggregation tests (Kubernetes' sample-apiserver in
 * miniature): HTTPS with a serving certificate for `<service>.<namespace>.svc` from a CA of its
 * own (the APIService's caBundle); trusts the front-proxy CA and header names it reads from
 * kube-system/extension-apiserver-authentication, as a real extension server does; serves
 * wardle.example.com/v1alpha1 flunders (namespaced; get, list, watch from memory; create adds
 * one) and records every request with the identity it carried. A request whose client
 * certificate does not chain to the front-proxy CA, or that names no user, is 401.
 */
import * as https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { WebSocketServer, type WebSocket } from 'ws';
import { createCA, issueCert } from '../../src/util/pki.js';

export const WARDLE_GROUP = 'wardle.example.com';
export const WARDLE_VERSION = 'v1alpha1';

export interface SeenRequest { method: string; path: string; user?: string; groups: string[]; extra: Record<string, string[]>; trusted: boolean }

export interface ExtensionApiserver {
  port: number;
  /** base64 PEM of the CA of the serving certificate (the APIService's caBundle). */
  caBundle: string;
  requests: SeenRequest[];
  /** Adds a flunder (watchers see ADDED). */
  addFlunder(namespace: string, name: string): void;
  /** Open watches (streamed and WebSocket). */
  watching(): number;
  close(): Promise<void>;
}

interface AuthConfigMap { caPem: string; userHeaders: string[]; groupHeaders: string[]; extraPrefixes: string[] }

/** Reads kube-system/extension-apiserver-authentication with the given client credentials. */
async function readAuthConfigMap(apiserverUrl: string, creds: { ca: string; cert: string; key: string }): Promise<AuthConfigMap> {
  const body = await new Promise<string>((resolve, reject) => {
    const req = https.get(`${apiserverUrl}/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication`, { ...creds }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => { text += d.toString(); });
      res.on('end', () => (res.statusCode === 200 ? resolve(text) : reject(new Error(`configmap: ${res.statusCode} ${text}`))));
    });
    req.on('error', reject);
  });
  const data = (JSON.parse(body) as { data: Record<string, string> }).data;
  const list = (k: string): string[] => (JSON.parse(data[k] ?? 'null') as string[] | null) ?? [];
  const caPem = data['requestheader-client-ca-file'];
  if (!caPem) throw new Error('the ConfigMap has no requestheader-client-ca-file');
  return { caPem, userHeaders: list('requestheader-username-headers'), groupHeaders: list('requestheader-group-headers'), extraPrefixes: list('requestheader-extra-headers-prefix') };
}

const values = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

function flunder(namespace: string, name: string, rv: number): Record<string, unknown> {
  return { apiVersion: `${WARDLE_GROUP}/${WARDLE_VERSION}`, kind: 'Flunder', metadata: { name, namespace, resourceVersion: String(rv), uid: `uid-${namespace}-${name}`, creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }, spec: {} };
}

const RESOURCE_LIST = {
  kind: 'APIResourceList', apiVersion: 'v1', groupVersion: `${WARDLE_GROUP}/${WARDLE_VERSION}`,
  resources: [{ name: 'flunders', singularName: 'flunder', namespaced: true, kind: 'Flunder', verbs: ['create', 'get', 'list', 'watch'], shortNames: ['fl'] }],
};

const GVK = [{ group: WARDLE_GROUP, version: WARDLE_VERSION, kind: 'Flunder' }];
const FLUNDER_SCHEMA = {
  description: 'A flunder of the wardle fixture.', type: 'object', 'x-kubernetes-group-version-kind': GVK,
  properties: { apiVersion: { type: 'string' }, kind: { type: 'string' }, metadata: { type: 'object' }, spec: { type: 'object', description: 'What the flunder wants.' } },
};
const LIST_PATH = `/apis/${WARDLE_GROUP}/${WARDLE_VERSION}/namespaces/{namespace}/flunders`;
const OPENAPI_V2 = {
  swagger: '2.0', info: { title: 'wardle', version: WARDLE_VERSION },
  paths: { [LIST_PATH]: { get: { operationId: 'listWardleV1alpha1NamespacedFlunder', responses: { 200: { description: 'OK' } } } } },
  definitions: { 'com.example.wardle.v1alpha1.Flunder': FLUNDER_SCHEMA },
};
const OPENAPI_V3_DOC = {
  openapi: '3.0.0', info: { title: 'wardle', version: WARDLE_VERSION },
  // kubectl explain finds the kind of a resource from its path's operations.
  paths: { [`${LIST_PATH}/{name}`]: { get: { operationId: 'readWardleV1alpha1NamespacedFlunder', 'x-kubernetes-action': 'get', 'x-kubernetes-group-version-kind': GVK[0],
    responses: { 200: { description: 'OK', content: { 'application/json': { schema: { $ref: '#/components/schemas/com.example.wardle.v1alpha1.Flunder' } } } } } } } },
  components: { schemas: { 'com.example.wardle.v1alpha1.Flunder': FLUNDER_SCHEMA } },
};

export async function startExtensionApiserver(o: {
  apiserverUrl: string; creds: { ca: string; cert: string; key: string }; serviceName: string; namespace: string; host?: string;
}): Promise<ExtensionApiserver> {
  const auth = await readAuthConfigMap(o.apiserverUrl, o.creds);
  const ca = await createCA({ commonName: 'wardle-ca' });
  const serving = await issueCert({ ca, commonName: `${o.serviceName}.${o.namespace}.svc`, dnsNames: [`${o.serviceName}.${o.namespace}.svc`], usages: 'server' });
  const requests: SeenRequest[] = [];
  const store = new Map<string, Record<string, unknown>>();
  const watchers = new Set<{ namespace: string; res: ServerResponse }>();
  let rv = 1;

  const addFlunder = (namespace: string, name: string): void => {
    const f = flunder(namespace, name, ++rv);
    store.set(`${namespace}/${name}`, f);
    for (const w of watchers) if (!w.namespace || w.namespace === namespace) w.res.write(JSON.stringify({ type: 'ADDED', object: f }) + '\n');
    for (const ws of sockets) ws.send(JSON.stringify({ type: 'ADDED', object: f }));
  };

  const json = (res: ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const status = (res: ServerResponse, code: number, reason: string, message: string): void =>
    json(res, code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const sock = req.socket as TLSSocket;
    const trusted = sock.authorized === true;
    // Each header line apart (Node joins repeated lines with ", " in req.headers).
    const user = auth.userHeaders.map((h) => values(req.headersDistinct[h.toLowerCase()])[0]).find((u) => u);
    const groups = auth.groupHeaders.flatMap((h) => values(req.headersDistinct[h.toLowerCase()]));
    const extra: Record<string, string[]> = {};
    for (const [k, v] of Object.entries(req.headersDistinct)) {
      const p = auth.extraPrefixes.find((x) => k.startsWith(x.toLowerCase()));
      if (p) extra[decodeURIComponent(k.slice(p.length))] = values(v);
    }
    const url = new URL(req.url ?? '/', 'https://wardle');
    requests.push({ method: req.method ?? 'GET', path: url.pathname + url.search, ...(user ? { user } : {}), groups, extra, trusted });
    if (!trusted || !user) { status(res, 401, 'Unauthorized', 'Unauthorized'); return; }
    const parts = url.pathname.split('/').filter(Boolean);
    if (url.pathname === `/apis/${WARDLE_GROUP}`) {
      const v = { groupVersion: `${WARDLE_GROUP}/${WARDLE_VERSION}`, version: WARDLE_VERSION };
      json(res, 200, { kind: 'APIGroup', apiVersion: 'v1', name: WARDLE_GROUP, versions: [v], preferredVersion: v });
      return;
    }
    if (url.pathname === `/apis/${WARDLE_GROUP}/${WARDLE_VERSION}`) { json(res, 200, RESOURCE_LIST); return; }
    if (url.pathname === '/openapi/v2') { json(res, 200, OPENAPI_V2); return; }
    if (url.pathname === '/openapi/v3') { json(res, 200, { paths: { [`apis/${WARDLE_GROUP}/${WARDLE_VERSION}`]: { serverRelativeURL: `/openapi/v3/apis/${WARDLE_GROUP}/${WARDLE_VERSION}?hash=1` } } }); return; }
    if (url.pathname === `/openapi/v3/apis/${WARDLE_GROUP}/${WARDLE_VERSION}`) { json(res, 200, OPENAPI_V3_DOC); return; }
    // /apis/G/V/flunders or /apis/G/V/namespaces/NS/flunders[/NAME]
    if (parts[0] !== 'apis' || parts[1] !== WARDLE_GROUP || parts[2] !== WARDLE_VERSION) { status(res, 404, 'NotFound', 'not found'); return; }
    let rest = parts.slice(3);
    let namespace = '';
    if (rest[0] === 'namespaces' && rest.length >= 3) { namespace = rest[1]!; rest = rest.slice(2); }
    if (rest[0] !== 'flunders') { status(res, 404, 'NotFound', 'not found'); return; }
    const name = rest[1];
    if (req.method === 'POST') {
      let body = '';
      req.on('data', (d: Buffer) => { body += d.toString(); });
      req.on('end', () => {
        const obj = JSON.parse(body) as { metadata?: { name?: string } };
        addFlunder(namespace, obj.metadata?.name ?? 'x');
        json(res, 201, store.get(`${namespace}/${obj.metadata?.name ?? 'x'}`));
      });
      return;
    }
    if (name) {
      const f = store.get(`${namespace}/${name}`);
      if (!f) status(res, 404, 'NotFound', `flunders.${WARDLE_GROUP} "${name}" not found`); else json(res, 200, f);
      return;
    }
    const items = [...store.values()].filter((f) => !namespace || (f.metadata as { namespace: string }).namespace === namespace);
    if (url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1') {
      res.writeHead(200, { 'content-type': 'application/json' });
      const w = { namespace, res };
      watchers.add(w);
      res.on('close', () => watchers.delete(w));
      // Without a resourceVersion a watch starts with the current objects (as Kubernetes does).
      if (!url.searchParams.get('resourceVersion') || url.searchParams.get('resourceVersion') === '0') {
        for (const f of items) res.write(JSON.stringify({ type: 'ADDED', object: f }) + '\n');
      }
      return;
    }
    json(res, 200, { apiVersion: `${WARDLE_GROUP}/${WARDLE_VERSION}`, kind: 'FlunderList', metadata: { resourceVersion: String(rv) }, items });
  };

  const server = https.createServer({ cert: serving.certPem, key: serving.keyPem, ca: auth.caPem, requestCert: true, rejectUnauthorized: false }, handler);
  // WebSocket watches: the same events as text frames.
  const wss = new WebSocketServer({ noServer: true });
  const sockets = new Set<WebSocket>();
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const trusted = (req.socket as TLSSocket).authorized === true;
    const user = auth.userHeaders.map((h) => values(req.headersDistinct[h.toLowerCase()])[0]).find((u) => u);
    const url = new URL(req.url ?? '/', 'https://wardle');
    requests.push({ method: 'WATCH', path: url.pathname + url.search, ...(user ? { user } : {}), groups: auth.groupHeaders.flatMap((h) => values(req.headersDistinct[h.toLowerCase()])), extra: {}, trusted });
    if (!trusted || !user) { socket.end('HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n'); return; }
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.add(ws);
      ws.on('close', () => sockets.delete(ws));
      for (const f of store.values()) ws.send(JSON.stringify({ type: 'ADDED', object: f }));
    });
  });
  await new Promise<void>((r) => server.listen(0, o.host ?? '0.0.0.0', r));
  return {
    port: (server.address() as AddressInfo).port,
    caBundle: Buffer.from(ca.certPem).toString('base64'),
    requests, addFlunder, watching: () => watchers.size + sockets.size,
    async close() {
      for (const w of watchers) w.res.destroy();
      for (const ws of sockets) ws.terminate();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
