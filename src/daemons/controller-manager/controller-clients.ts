/**
 * --use-service-account-credentials: each controller gets its own client that authenticates as
 * `system:serviceaccount:kube-system:<account>` (Kubernetes' account of that controller, whose
 * `system:controller:<account>` role the bootstrap policy grants), with a token from the
 * TokenRequest API renewed before expiry — kube-controller-manager's dynamic client builder.
 * The shared informers stay on the manager's own identity, as in Kubernetes; so do controllers
 * without an account (serviceaccount-token mints the tokens the others use).
 *
 * All the per-account clients share one HTTP/2 connection that carries no client certificate
 * (a certificate would authenticate before the bearer token), each with its own rate limit.
 */
import type { Logger } from 'pino';
import { CONTROLLER_SERVICE_ACCOUNTS } from '../../auth/authorizers/rbac/bootstrap/controller-roles.js';
import { ServiceAccountTokenSource, serviceAccountUsername } from '../../client/service-account-token-source.js';
import { Http2Transport } from '../../client/transport.js';
import { RestClient, type ClientConnection, type ClientSettings } from './deps.js';

/** The namespace of the controllers' accounts. */
export const CONTROLLER_ACCOUNTS_NAMESPACE = 'kube-system';

export interface ControllerClients {
  /** The client a controller acts with. */
  clientFor(controller: string): RestClient;
  /** The user a controller acts as (for logs and tests), undefined for the manager's own. */
  accountFor(controller: string): string | undefined;
  close(): void;
}

/** Every controller uses the manager's client (without --use-service-account-credentials). */
export function sharedControllerClients(client: RestClient): ControllerClients {
  return { clientFor: () => client, accountFor: () => undefined, close: () => undefined };
}

/** The connection without client credentials: the per-account clients add their bearer token. */
function anonymousConnection(c: ClientConnection): ClientConnection {
  return {
    server: c.server,
    ...(c.servers ? { servers: c.servers } : {}),
    ...(c.ca ? { ca: c.ca } : {}),
    ...(c.insecureSkipTlsVerify ? { insecureSkipTlsVerify: true } : {}),
    ...(c.tlsServerName ? { tlsServerName: c.tlsServerName } : {}),
  };
}

export function serviceAccountControllerClients(o: {
  /** The manager's own client: gets/creates the accounts and asks for their tokens. */
  client: RestClient;
  connection: ClientConnection;
  settings: ClientSettings;
  log: Logger;
  accounts?: Readonly<Record<string, string>>;
}): ControllerClients {
  const accounts = o.accounts ?? CONTROLLER_SERVICE_ACCOUNTS;
  const transport = new Http2Transport(anonymousConnection(o.connection));
  // One client per account: controllers sharing an account (csrsigning/csrapproving/csrcleaner)
  // share its token and its rate limit, as Kubernetes' cached clients do.
  const byAccount = new Map<string, RestClient>();
  const clientFor = (controller: string): RestClient => {
    const account = accounts[controller];
    if (!account) return o.client;
    let c = byAccount.get(account);
    if (!c) {
      const user = serviceAccountUsername(CONTROLLER_ACCOUNTS_NAMESPACE, account);
      c = new RestClient({
        connection: anonymousConnection(o.connection), sharedTransport: transport,
        qps: o.settings.qps, burst: o.settings.burst, contentType: o.settings.contentType,
        // Kubernetes appends the account's user name to the user agent.
        userAgent: `${o.settings.userAgent ?? 'corectl-controller-manager'}/${user}`,
        log: o.log.child({ component: 'client', serviceAccount: account }),
        tokenSource: new ServiceAccountTokenSource({
          client: o.client, namespace: CONTROLLER_ACCOUNTS_NAMESPACE, name: account, log: o.log.child({ serviceAccount: account }),
        }),
      });
      byAccount.set(account, c);
    }
    return c;
  };
  return {
    clientFor,
    accountFor: (controller) => (accounts[controller] ? serviceAccountUsername(CONTROLLER_ACCOUNTS_NAMESPACE, accounts[controller] as string) : undefined),
    close: () => { for (const c of byAccount.values()) c.close(); transport.close(); },
  };
}
