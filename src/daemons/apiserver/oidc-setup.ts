/**
 * The --oidc-* options → the OIDC token authenticator. Bad values are start-up errors naming the
 * option; the issuer itself is contacted in the background (see auth/authenticators/oidc-keys.ts),
 * so an issuer that is down does not stop the API server.
 */
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { OIDC_ALLOWED_SIGNING_ALGS, OidcAuthenticator } from '../../auth/authenticators/oidc.js';
import type { ApiserverConfig } from '../../flags/apiserver.js';
import { splitPemCertificates } from '../../util/pki.js';
import { StartupError } from './serving-options.js';

/** The --oidc-* options as given ('' for unset strings). */
export interface OidcServingOptions {
  issuerUrl: string;
  clientId: string;
  caFile: string;
  signingAlgs: string[];
  usernameClaim: string;
  usernamePrefix: string;
  groupsClaim: string;
  groupsPrefix: string;
}

/** Undefined unless --oidc-issuer-url is set (OIDC is off). */
export function oidcOptionsFromConfig(c: ApiserverConfig): OidcServingOptions | undefined {
  if (!c.oidcIssuerUrl) return undefined;
  return {
    issuerUrl: c.oidcIssuerUrl, clientId: c.oidcClientId, caFile: c.oidcCaFile,
    signingAlgs: c.oidcSigningAlgs, usernameClaim: c.oidcUsernameClaim, usernamePrefix: c.oidcUsernamePrefix,
    groupsClaim: c.oidcGroupsClaim, groupsPrefix: c.oidcGroupsPrefix,
  };
}

/** Checks the options, reads the CA file and starts the background discovery. */
export async function buildOidcAuthenticator(o: OidcServingOptions, log: Logger): Promise<OidcAuthenticator> {
  let url: URL;
  try { url = new URL(o.issuerUrl); } catch { throw new StartupError('--oidc-issuer-url', `${JSON.stringify(o.issuerUrl)} is not a URL`); }
  if (url.protocol !== 'https:') throw new StartupError('--oidc-issuer-url', `${JSON.stringify(o.issuerUrl)} has scheme "${url.protocol.replace(/:$/, '')}", https is required`);
  if (url.hostname === '') throw new StartupError('--oidc-issuer-url', `${JSON.stringify(o.issuerUrl)} has no host`);
  if (o.clientId === '') throw new StartupError('--oidc-client-id', 'is required when --oidc-issuer-url is set');
  if (o.usernameClaim === '') throw new StartupError('--oidc-username-claim', 'must name a claim');
  const algs = o.signingAlgs.length ? o.signingAlgs : ['RS256'];
  for (const alg of algs) {
    if (!OIDC_ALLOWED_SIGNING_ALGS.includes(alg)) {
      throw new StartupError('--oidc-signing-algs', `unsupported signing alg "${alg}" (allowed: ${OIDC_ALLOWED_SIGNING_ALGS.join(', ')})`);
    }
  }
  let caPem: string | undefined;
  if (o.caFile) {
    try {
      caPem = await readFile(o.caFile, 'utf8');
    } catch (e) {
      throw new StartupError('--oidc-ca-file', `cannot read "${o.caFile}": ${(e as Error).message}`, { cause: e });
    }
    if (splitPemCertificates(caPem).length === 0) throw new StartupError('--oidc-ca-file', `no PEM certificate in "${o.caFile}"`);
  } else {
    log.info('oidc: no --oidc-ca-file, the host\'s root certificates verify the issuer');
  }
  const authenticator = new OidcAuthenticator({
    issuerUrl: o.issuerUrl, clientId: o.clientId, signingAlgs: algs, usernameClaim: o.usernameClaim,
    usernamePrefix: o.usernamePrefix, groupsClaim: o.groupsClaim, groupsPrefix: o.groupsPrefix,
  }, { log: log.child({ component: 'oidc' }), ...(caPem ? { caPem } : {}) });
  void authenticator.start();
  return authenticator;
}
