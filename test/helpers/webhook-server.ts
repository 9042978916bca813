/**
 * A real HTTPS admission webhook server for tests. Each path answers with the function set for
 * it in `answers` (allow when none is set); every AdmissionReview it gets is recorded with the
 * path it came to (query included). `tlsWebhookServer` also makes the CA and a serving
 * certificate for 127.0.0.1, localhost and hooks.webhooks.svc, and gives the caBundle to
 * configure webhooks with.
 */
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import { createCA, issueCert } from '../../src/util/pki.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;
type Obj = Record<string, unknown>;

export interface Review { request: Any; path: string }
/** A response's fields (uid added), 'hang' to never answer, or a raw HTTP status and body. */
export type Answer = Obj | 'hang' | { status: number; body: string };

export interface WebhookServer {
  port: number;
  reviews: Review[];
  answers: Map<string, (request: Any) => Answer>;
  close(): Promise<void>;
}

export async function webhookServer(cert: string, key: string): Promise<WebhookServer> {
  const reviews: Review[] = [];
  const answers = new Map<string, (r: Any) => Answer>();
  const server = https.createServer({ cert, key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0]!;
      const review = JSON.parse(Buffer.concat(chunks).toString()) as { request: Any };
      reviews.push({ request: review.request, path: req.url ?? '' });
      const answer: Answer = (answers.get(path) ?? (() => ({ allowed: true })))(review.request);
      if (answer === 'hang') return;
      if ('body' in answer && typeof answer.status === 'number') {
        res.writeHead(answer.status, { 'content-type': 'text/plain' }).end(String(answer.body));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: review.request.uid, ...answer } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port, reviews, answers,
    async close() { server.closeAllConnections(); await new Promise((r) => server.close(r)); },
  };
}

export interface TlsWebhookServer extends WebhookServer {
  /** The base64 PEM of the CA that signed the serving certificate (a clientConfig's caBundle). */
  caBundle: string;
  /** The https://127.0.0.1:<port><path> URL of a path (a clientConfig's url). */
  url(path: string): string;
}

export async function tlsWebhookServer(): Promise<TlsWebhookServer> {
  const ca = await createCA({ commonName: 'webhook-ca' });
  const serving = await issueCert({ ca, commonName: 'hooks', dnsNames: ['localhost', 'hooks.webhooks.svc'], ips: ['127.0.0.1'], usages: 'server' });
  const server = await webhookServer(serving.certPem, serving.keyPem);
  return Object.assign(server, {
    caBundle: Buffer.from(ca.certPem).toString('base64'),
    url: (path: string) => `https://127.0.0.1:${server.port}${path}`,
  });
}

/** An allowing answer that patches the object with these JSON Patch operations. */
export function jsonPatchAnswer(ops: unknown[]): Obj {
  return { allowed: true, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(ops)).toString('base64') };
}

/** What an authorization webhook fixture answers: a SubjectAccessReview status, 'hang', or a raw HTTP status and body. */
export type SarAnswer = { allowed?: boolean; denied?: boolean; reason?: string } | 'hang' | { status: number; body: string };

export interface SarWebhookServer {
  /** https://127.0.0.1:<port>/authorize */
  url: string;
  /** PEM of the CA that signed the serving certificate. */
  caPem: string;
  /** Every SubjectAccessReview received, with the caller's credentials. */
  reviews: Array<{ review: Any; authorization?: string; clientCN?: string }>;
  /** Decides each answer (default: allowed). */
  answer: (review: Any) => SarAnswer;
  close(): Promise<void>;
}

/**
 * A real HTTPS authorization webhook (--authorization-webhook-config-file's server) for tests:
 * records each SubjectAccessReview POSTed to /authorize and answers with `answer`. With
 * `clientCaPem` it asks for a client certificate verified against it (the caller's CN is recorded).
 */
export async function sarWebhookServer(opts: { clientCaPem?: string } = {}): Promise<SarWebhookServer> {
  const ca = await createCA({ commonName: 'authz-webhook-ca' });
  const serving = await issueCert({ ca, commonName: 'authz', dnsNames: ['localhost'], ips: ['127.0.0.1'], usages: 'server' });
  const state: SarWebhookServer = {
    url: '', caPem: ca.certPem, reviews: [], answer: () => ({ allowed: true }),
    close: async () => undefined,
  };
  const server = https.createServer({
    cert: serving.certPem, key: serving.keyPem,
    ...(opts.clientCaPem ? { requestCert: true, rejectUnauthorized: false, ca: opts.clientCaPem } : {}),
  }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString()) as Any;
      const sock = req.socket as import('node:tls').TLSSocket;
      const cn = sock.authorized ? (sock.getPeerCertificate().subject?.CN as string | undefined) : undefined;
      state.reviews.push({ review, ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}), ...(cn ? { clientCN: cn } : {}) });
      const a = state.answer(review);
      if (a === 'hang') return;
      if ('body' in a && typeof a.status === 'number') {
        res.writeHead(a.status, { 'content-type': 'text/plain' }).end(a.body);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', status: a }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  state.url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/authorize`;
  state.close = async () => { server.closeAllConnections(); await new Promise((r) => server.close(r)); };
  return state;
}

/** What a token webhook fixture answers: a TokenReview status, 'hang', or a raw HTTP status and body. */
export type TokenReviewAnswer = Obj | 'hang' | { status: number; body: string };

export interface TokenReviewServer {
  /** https://127.0.0.1:<port>/authenticate */
  url: string;
  /** PEM of the CA that signed the serving certificate. */
  caPem: string;
  /** Every TokenReview received (with the caller's Authorization header). */
  reviews: Array<{ review: Any; authorization?: string }>;
  /** Decides each answer (default: not authenticated). */
  answer: (review: Any) => TokenReviewAnswer;
  /** Stops listening and drops open connections (the webhook is down). */
  close(): Promise<void>;
}

/**
 * A real HTTPS token webhook (--authentication-token-webhook-config-file's server) for tests:
 * records each TokenReview POSTed to /authenticate and answers with `answer`.
 */
export async function tokenReviewServer(): Promise<TokenReviewServer> {
  const ca = await createCA({ commonName: 'authn-webhook-ca' });
  const serving = await issueCert({ ca, commonName: 'authn', dnsNames: ['localhost'], ips: ['127.0.0.1'], usages: 'server' });
  const state: TokenReviewServer = {
    url: '', caPem: ca.certPem, reviews: [], answer: () => ({ authenticated: false }),
    close: async () => undefined,
  };
  const server = https.createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString()) as Any;
      state.reviews.push({ review, ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}) });
      const a = state.answer(review);
      if (a === 'hang') return;
      if ('body' in a && typeof a.status === 'number') {
        res.writeHead(a.status, { 'content-type': 'text/plain' }).end(String(a.body));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', status: a }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  state.url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/authenticate`;
  state.close = async () => { server.closeAllConnections(); await new Promise((r) => server.close(r)); };
  return state;
}
