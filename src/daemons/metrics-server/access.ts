/**
 * Who may ask the metrics server, as an extension API server decides it: the caller is the user
 * the API server's front proxy names in the request-header headers, trusted only on a
 * connection whose client certificate chains to the front-proxy CA (and has an allowed name)
 * that kube-system/extension-apiserver-authentication publishes; anything else is 401. May
 * they: system:masters always; otherwise a SubjectAccessReview at the API server (resource
 * attributes for the metrics resources, non-resource ones for discovery), answers cached 10 s.
 */
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { KubeObject } from '../../api/resources/types.js';
import { CaBundle } from '../../auth/authenticators/ca-bundle.js';
import { RequestHeaderAuthenticator } from '../../auth/authenticators/request-header.js';
import type { AuthRequest } from '../../auth/authenticator.js';
import type { UserInfo } from '../../auth/user.js';
import type { RestClient } from '../../client/rest-client.js';
import { TtlCache } from '../../util/ttl-cache.js';

export interface FrontProxyConfig { caPem: string; usernameHeaders: string[]; groupHeaders: string[]; extraHeaderPrefixes: string[]; allowedNames: string[] }

/** The request-header settings from the API server's extension-apiserver-authentication ConfigMap. */
export async function readFrontProxyConfig(client: RestClient): Promise<FrontProxyConfig> {
  const cm = await client.get({ group: '', version: 'v1', resource: 'configmaps', namespace: 'kube-system' }, 'extension-apiserver-authentication');
  const data = (cm.data ?? {}) as Record<string, string>;
  const caPem = data['requestheader-client-ca-file'];
  if (!caPem) throw new Error('kube-system/extension-apiserver-authentication has no requestheader-client-ca-file: start the API server with --requestheader-client-ca-file');
  const list = (k: string): string[] => {
    try { return (JSON.parse(data[k] ?? 'null') as string[] | null) ?? []; } catch { return []; }
  };
  return {
    caPem, usernameHeaders: list('requestheader-username-headers'), groupHeaders: list('requestheader-group-headers'),
    extraHeaderPrefixes: list('requestheader-extra-headers-prefix'), allowedNames: list('requestheader-allowed-names'),
  };
}

/** What a request asks to do, for authorization. */
export type Attributes =
  | { kind: 'resource'; verb: string; resource: 'nodes' | 'pods'; namespace: string; name: string }
  | { kind: 'path'; verb: string; path: string };

export type AccessResult = { ok: true; user: UserInfo } | { ok: false; code: 401 | 403 | 500; message: string };

export class MetricsAccess {
  private readonly authn: RequestHeaderAuthenticator;
  private readonly decisions = new TtlCache<boolean>();

  constructor(private readonly client: RestClient, cfg: FrontProxyConfig) {
    this.authn = new RequestHeaderAuthenticator(new CaBundle(cfg.caPem), {
      usernameHeaders: cfg.usernameHeaders.length ? cfg.usernameHeaders : ['X-Remote-User'],
      groupHeaders: cfg.groupHeaders.length ? cfg.groupHeaders : ['X-Remote-Group'],
      extraHeaderPrefixes: cfg.extraHeaderPrefixes.length ? cfg.extraHeaderPrefixes : ['X-Remote-Extra-'],
      allowedNames: cfg.allowedNames,
    });
  }

  async check(req: IncomingMessage, attrs: Attributes): Promise<AccessResult> {
    const sock = req.socket as TLSSocket;
    const peer = sock.getPeerCertificate?.();
    const ar: AuthRequest = { headers: { ...req.headers }, rawHeaders: req.rawHeaders };
    if (peer) ar.tls = { authorized: sock.authorized === true, peerCertificate: peer, ...(sock.authorizationError ? { authorizationError: String(sock.authorizationError) } : {}) };
    const r = await this.authn.authenticate(ar);
    if (!r.ok) return { ok: false, code: 401, message: 'Unauthorized' };
    const user = r.user;
    if (user.groups.includes('system:masters')) return { ok: true, user };
    const spec: Record<string, unknown> = {
      user: user.name, groups: user.groups, ...(user.uid ? { uid: user.uid } : {}), ...(user.extra ? { extra: user.extra } : {}),
      ...(attrs.kind === 'resource'
        ? { resourceAttributes: { group: 'metrics.k8s.io', version: 'v1beta1', resource: attrs.resource, verb: attrs.verb, ...(attrs.namespace ? { namespace: attrs.namespace } : {}), ...(attrs.name ? { name: attrs.name } : {}) } }
        : { nonResourceAttributes: { path: attrs.path, verb: attrs.verb } }),
    };
    let allowed: boolean;
    try {
      allowed = await this.decisions.get(JSON.stringify(spec), async () => {
        const sar = await this.client.create<KubeObject & { status?: { allowed?: boolean } }>({ group: 'authorization.k8s.io', version: 'v1', resource: 'subjectaccessreviews' },
          { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec });
        return sar.status?.allowed === true;
      }, () => 10_000);
    } catch {
      return { ok: false, code: 500, message: 'authorization error' };
    }
    if (allowed) return { ok: true, user };
    const what = attrs.kind === 'resource'
      ? `${attrs.resource}.metrics.k8s.io${attrs.name ? ` "${attrs.name}"` : ''} is forbidden: User "${user.name}" cannot ${attrs.verb} resource "${attrs.resource}" in API group "metrics.k8s.io"${attrs.namespace ? ` in the namespace "${attrs.namespace}"` : ' at the cluster scope'}`
      : `forbidden: User "${user.name}" cannot ${attrs.verb} path "${attrs.path}"`;
    return { ok: false, code: 403, message: what };
  }
}
