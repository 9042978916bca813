/**
 * Builds the authentication and authorization chains from the options. Start-up errors name the
 * option. Authorization modes not implemented yet (ABAC, Webhook, RBAC, Node) are refused at
 * start-up with a clear line unless an implementation is passed in `extraModes`.
 */
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { AlwaysAllowAuthorizer } from '../../auth/always-allow.js';
import { AlwaysDenyAuthorizer } from '../../auth/always-deny.js';
import { AnonymousAuthenticator } from '../../auth/anonymous.js';
import type { Authenticator, TokenAuthenticator } from '../../auth/authenticator.js';
import type { Authorizer } from '../../auth/authorizer.js';
import { BearerTokenAuthenticator } from '../../auth/bearer-token.js';
import { CaBundle } from '../../auth/authenticators/ca-bundle.js';
import { identityHeaderRemover, STANDARD_REQUEST_HEADERS } from '../../auth/authenticators/request-header.js';
import { BootstrapTokenAuthenticator, type SecretSource } from '../../auth/authenticators/bootstrap-token.js';
import { PrivilegedGroupsAuthorizer } from '../../auth/privileged-groups.js';
import { TokenFileAuthenticator } from '../../auth/token-file.js';
import { UnionAuthenticator } from '../../auth/union-authenticator.js';
import { UnionAuthorizer } from '../../auth/union-authorizer.js';
import { X509Authenticator } from '../../auth/x509.js';
import { splitPemCertificates } from '../../util/pki.js';
import { buildBasicAuth, buildRequestHeader, buildTokenWebhook, type PublishedAuthentication } from './authn-options.js';
import { StartupError, type ServingOptions } from './serving-options.js';
import { buildOidcAuthenticator } from './oidc-setup.js';

export interface AuthenticationSetup {
  authenticator: Authenticator;
  /** PEM bundle the TLS listener verifies client certificates against (every authenticator's CAs); undefined = do not ask. */
  clientCaPem?: string;
  /** What the extension-apiserver-authentication ConfigMap publishes. */
  published: PublishedAuthentication;
  /** Releases what the authenticators hold (webhook connections, OIDC discovery). */
  close(): void;
  /** With --enable-bootstrap-token-auth: gives the bootstrap-token authenticator its Secrets once storage is open. */
  useBootstrapTokenSecrets?(source: SecretSource): void;
}

/**
 * --anonymous-auth, unless AlwaysAllow is among the authorization modes: then anyone at all
 * would be cluster-admin, so Kubernetes turns anonymous requests off and says so (same words).
 */
export function anonymousAllowed(opts: Pick<ServingOptions, 'anonymousAuth' | 'authorizationMode'>, log: Logger): boolean {
  if (!opts.anonymousAuth) return false;
  const modes = opts.authorizationMode?.length ? opts.authorizationMode : ['AlwaysAllow'];
  if (!modes.includes('AlwaysAllow')) return true;
  log.warn('AnonymousAuth is not allowed with the AlwaysAllow authorizer. Resetting AnonymousAuth to false. You should use a different authorizer');
  return false;
}

export type AuthenticationOptions = Pick<ServingOptions, 'clientCaFile' | 'tokenAuthFile' | 'anonymousAuth' | 'basicAuthFile'
  | 'authenticationTokenWebhookConfigFile' | 'authenticationTokenWebhookCacheTtl' | 'requestheaderClientCaFile'
  | 'requestheaderAllowedNames' | 'requestheaderUsernameHeaders' | 'requestheaderGroupHeaders' | 'requestheaderExtraHeadersPrefix'>;

/** The chain in Kubernetes' order: request-header, basic, x509, bearer tokens (file, service accounts, ..., webhook), anonymous. */
export async function buildAuthentication(
  opts: AuthenticationOptions & Pick<ServingOptions, 'oidc'> & Partial<Pick<ServingOptions, 'authorizationMode' | 'enableBootstrapTokenAuth'>>,
  log: Logger,
  extraTokenAuthenticators: TokenAuthenticator[] = [],
  more: { apiAudiences?: readonly string[] } = {},
): Promise<AuthenticationSetup> {
  const chain: Authenticator[] = [];
  const closers: Array<() => void> = [];
  const requestHeader = await buildRequestHeader(opts);
  if (requestHeader) chain.push(requestHeader.authenticator);
  const basic = await buildBasicAuth(opts, log);
  if (basic) chain.push(basic);
  let clientCaPem: string | undefined;
  if (opts.clientCaFile) {
    try {
      clientCaPem = await readFile(opts.clientCaFile, 'utf8');
    } catch (e) {
      throw new StartupError('--client-ca-file', `cannot read "${opts.clientCaFile}": ${(e as Error).message}`, { cause: e });
    }
    if (splitPemCertificates(clientCaPem).length === 0) {
      throw new StartupError('--client-ca-file', `no PEM certificate in "${opts.clientCaFile}"`);
    }
    // The listener also accepts the front proxy's CA: then the chain must lead to the client CA.
    chain.push(new X509Authenticator(requestHeader ? new CaBundle(clientCaPem) : undefined));
  }
  const tokens: TokenAuthenticator[] = [];
  if (opts.tokenAuthFile) {
    try {
      const { authenticator, warnings } = await TokenFileAuthenticator.load(opts.tokenAuthFile);
      for (const w of warnings) log.warn(w);
      tokens.push(authenticator);
    } catch (e) {
      throw new StartupError('--token-auth-file', (e as Error).message, { cause: e });
    }
  }
  tokens.push(...extraTokenAuthenticators);
  // Bootstrap tokens after the service-account tokens, as in Kubernetes.
  let bootstrapSecrets: SecretSource | undefined;
  if (opts.enableBootstrapTokenAuth) {
    tokens.push(new BootstrapTokenAuthenticator({ secrets: () => bootstrapSecrets, log: log.child({ component: 'bootstrap-token' }) }));
  }
  // OpenID Connect after the service-account tokens, as in Kubernetes.
  const oidc = opts.oidc ? await buildOidcAuthenticator(opts.oidc, log) : undefined;
  if (oidc) { tokens.push(oidc); closers.push(() => oidc.close()); }
  // The token webhook, remote, comes after every local token authenticator.
  const webhook = await buildTokenWebhook(opts, log, more.apiAudiences);
  if (webhook) { tokens.push(webhook); closers.push(() => webhook.close()); }
  if (tokens.length) chain.push(new BearerTokenAuthenticator(tokens));
  const anonymous = anonymousAllowed({ anonymousAuth: opts.anonymousAuth, authorizationMode: opts.authorizationMode ?? [] }, log) ? new AnonymousAuthenticator() : undefined;
  const published: PublishedAuthentication = {};
  if (clientCaPem) published.clientCaPem = clientCaPem;
  if (requestHeader) published.requestHeader = requestHeader.published;
  const listenerCa = [clientCaPem, requestHeader?.published.caPem].filter((p): p is string => !!p);
  const setup: AuthenticationSetup = {
    authenticator: new UnionAuthenticator(chain, anonymous, identityHeaderRemover([STANDARD_REQUEST_HEADERS, ...(requestHeader ? [requestHeader.config] : [])])),
    published,
    close: () => { for (const c of closers) c(); },
  };
  if (listenerCa.length) setup.clientCaPem = listenerCa.map((p) => p.trimEnd()).join('\n') + '\n';
  if (opts.enableBootstrapTokenAuth) setup.useBootstrapTokenSecrets = (source) => { bootstrapSecrets = source; };
  return setup;
}

export function buildAuthorizer(modes: string[], extraModes: Record<string, Authorizer> = {}): Authorizer {
  const chain: Authorizer[] = [new PrivilegedGroupsAuthorizer()];
  const list = modes.length ? modes : ['AlwaysAllow'];
  for (const mode of list) {
    const extra = extraModes[mode];
    if (extra) { chain.push(extra); continue; }
    switch (mode) {
      case 'AlwaysAllow': chain.push(new AlwaysAllowAuthorizer()); break;
      case 'AlwaysDeny': chain.push(new AlwaysDenyAuthorizer()); break;
      case 'ABAC': case 'Webhook': case 'RBAC': case 'Node':
        throw new StartupError('--authorization-mode', `authorization mode "${mode}" is not implemented yet (available: AlwaysAllow, AlwaysDeny)`);
      default:
        throw new StartupError('--authorization-mode', `unknown authorization mode "${mode}"`);
    }
  }
  return new UnionAuthorizer(chain);
}
