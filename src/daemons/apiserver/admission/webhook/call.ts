/**
 * One HTTPS POST of an AdmissionReview to a webhook: TLS verified against the webhook's caBundle
 * (else the system's roots) and the given server name, the API server's client certificate
 * when one is configured, `?timeout=<n>s` on the URL and the whole call bounded by
 * timeoutSeconds, as Kubernetes' webhook client does. Connections are kept alive per trust
 * configuration (idle ones do not keep the process running).
 *
 * Failures are CallFailure with Go's wording where clients see it ("Post "<url>": context
 * deadline exceeded", "dial tcp <addr>: connect: connection refused").
 */
import * as https from 'node:https';

export interface ClientCert {
  readonly cert: string | Buffer;
  readonly key: string | Buffer;
}

export interface CallTarget {
  /** https://host:port/path (no query): what is posted to, and shown in errors. */
  readonly url: URL;
  /** The name the server's certificate must carry (defaults to the URL's host). */
  readonly serverName?: string;
  readonly caPem?: string;
  /** Where to connect instead of the URL's host (a service's endpoint); its failure is the call's. */
  readonly connect?: () => Promise<{ host: string; port: number }>;
}

class CallFailure extends Error {}

const agents = new Map<string, https.Agent>();
const MAX_AGENTS = 64;

function agentFor(caPem: string | undefined, client: ClientCert | undefined): https.Agent {
  const key = `${caPem ?? ''}\u0000${client ? String(client.cert) : ''}`;
  let agent = agents.get(key);
  if (!agent) {
    // A configuration change may leave agents unused; a small bound keeps them from piling up.
    if (agents.size >= MAX_AGENTS) {
      const [oldest] = agents;
      if (oldest) { oldest[1].destroy(); agents.delete(oldest[0]); }
    }
    agent = new https.Agent({
      keepAlive: true, maxSockets: 64, timeout: 60_000,
      ...(caPem ? { ca: caPem } : {}), ...(client ? { cert: client.cert, key: client.key } : {}),
    });
    agents.set(key, agent);
  }
  return agent;
}

function goDialError(e: NodeJS.ErrnoException, host: string): string {
  switch (e.code) {
    case 'ECONNREFUSED': return `dial tcp ${host}: connect: connection refused`;
    case 'ENOTFOUND': return `dial tcp: lookup ${host.replace(/:\d+$/, '')}: no such host`;
    case 'ECONNRESET': return 'read: connection reset by peer';
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'DEPTH_ZERO_SELF_SIGNED_CERT': return 'tls: failed to verify certificate: x509: certificate signed by unknown authority';
    case 'ERR_TLS_CERT_ALTNAME_INVALID': return `tls: failed to verify certificate: x509: ${e.message}`;
    default: return e.message;
  }
}

/** Posts `body` and returns the parsed JSON answer of a 2xx response; CallFailure otherwise. */
export async function postReview(t: CallTarget, body: string, timeoutSeconds: number, client?: ClientCert): Promise<unknown> {
  const url = new URL(t.url);
  url.search = `?timeout=${timeoutSeconds}s`;
  // A service's URL is shown with its port even when it is 443, as Kubernetes builds it.
  const shown = `Post "${t.connect ? `https://${url.hostname}:${url.port || 443}${url.pathname}${url.search}` : url.href}"`;
  let address: { host: string; port: number } | undefined;
  if (t.connect) {
    try { address = await t.connect(); } catch (e) { throw new CallFailure(`${shown}: ${(e as Error).message}`); }
  }
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (message: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      reject(new CallFailure(`${shown}: ${message}`));
    };
    const req = https.request(url, {
      method: 'POST', agent: agentFor(t.caPem, client),
      ...(t.serverName ? { servername: t.serverName } : {}),
      ...(address ? { host: address.host, hostname: address.host, port: address.port } : {}),
      headers: {
        host: url.host, 'content-type': 'application/json', accept: 'application/json, */*',
        'content-length': Buffer.byteLength(body), 'user-agent': 'kube-apiserver-admission',
      },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('error', (e) => fail(e.message));
      res.on('end', () => {
        if (settled) return;
        const text = Buffer.concat(chunks).toString('utf8');
        const code = res.statusCode ?? 0;
        if (code < 200 || code > 299) { fail(unexpectedStatus(code, text)); return; }
        let parsed: unknown;
        try { parsed = JSON.parse(text); } catch (e) { fail(`invalid JSON in the webhook response: ${(e as Error).message}`); return; }
        settled = true;
        clearTimeout(timer);
        resolve(parsed);
      });
    });
    const timer = setTimeout(() => fail('context deadline exceeded'), timeoutSeconds * 1000);
    req.on('error', (e: NodeJS.ErrnoException) => fail(goDialError(e, address ? `${address.host}:${address.port}` : url.host)));
    req.end(body);
  });
}

/** What Go's REST client says of a response outside 2xx: a Status body's message, else its generic text. */
function unexpectedStatus(code: number, body: string): string {
  try {
    const st = JSON.parse(body) as { kind?: unknown; message?: unknown };
    if (st.kind === 'Status' && typeof st.message === 'string' && st.message) return st.message;
  } catch { /* not a Status */ }
  switch (code) {
    case 400: return 'the server rejected our request for an unknown reason';
    case 401: return 'the server has asked for the client to provide credentials';
    case 403: return `forbidden: ${body.trim()}`;
    case 404: return 'the server could not find the requested resource';
    case 405: return 'the server does not allow this method on the requested resource';
    case 429: return 'the server has received too many requests and has asked us to try again later';
    case 500: return `an error on the server (${JSON.stringify(body.trim())}) has prevented the request from succeeding`;
    case 503: return 'the server is currently unable to handle the request';
    case 504: return 'the server was unable to return a response in the time allotted, but may still be processing the request';
    default: return `the server responded with the status code ${code} but did not return more information`;
  }
}
