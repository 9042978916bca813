/**
 * Service accounts in the API server: the token authenticator (bound and legacy JWTs) and the
 * serviceaccounts/token subresource (TokenRequest), both built from the --service-account-*
 * options. `prepareServiceAccounts` runs before the listener exists (its authenticator goes into
 * the authentication chain); `install` runs once the REST layer exists: it registers the
 * subresource and gives the authenticator its store lookup (until then, with
 * --service-account-lookup, service-account tokens fail).
 *
 * Defaults: the issuer is --service-account-issuer, else DEFAULT_ISSUER; the API audiences are
 * --service-account-api-audiences, else the issuer; the verification keys are
 * --service-account-key-file, else --tls-private-key-file, and always the signing key's public
 * part (tokens we issue must verify).
 */
import { createPublicKey } from 'node:crypto';
import type { Logger } from 'pino';
import { findResource } from '../../../api/resources/registry.js';
import type { KubeObject, ResourceDefinition } from '../../../api/resources/types.js';
import { isApiError } from '../../../api/meta/status.js';
import type { ApiserverConfig } from '../../../flags/apiserver.js';
import {
  readSigningKey, readVerificationKeys, uniqueKeys, verificationKeyOf, type SigningKey, type VerificationKey,
} from '../../../auth/service-account-keys.js';
import { ServiceAccountTokenAuthenticator, type LookedUpObject, type ServiceAccountLookup } from '../../../auth/service-account-token.js';
import type { RestApi } from '../rest/rest-api.js';
import type { ResourceRegistry } from '../registry/resource-registry.js';
import { StartupError } from '../serving-options.js';
import { TokenIssuer } from './token-issuer.js';
import { createTokenRequestHandler } from './token-request.js';

export const DEFAULT_ISSUER = 'https://kubernetes.default.svc.cluster.local';

export type ServiceAccountOptions = Pick<ApiserverConfig,
  'serviceAccountIssuer' | 'serviceAccountApiAudiences' | 'serviceAccountKeyFile' | 'serviceAccountLookup' | 'serviceAccountSigningKeyFile' | 'tlsPrivateKeyFile'>;

export interface ServiceAccountSetup {
  /** Undefined when there is no key to verify with. */
  readonly authenticator?: ServiceAccountTokenAuthenticator;
  /** Undefined without a signing key. */
  readonly issuer?: TokenIssuer;
  readonly issuerName: string;
  readonly apiAudiences: readonly string[];
  /** Registers serviceaccounts/token and binds the lookup to the REST registry. */
  install(rest: Pick<RestApi, 'addSubresourceHandler' | 'registry'>): void;
}

export interface ExtraServiceAccountOptions {
  /** --service-account-max-token-expiration (not in the option reference yet); 0 = no cap. */
  readonly maxTokenExpirationSeconds?: number;
  readonly log?: Logger;
}

async function lookedUp(registry: ResourceRegistry, def: ResourceDefinition, ns: string, name: string): Promise<(KubeObject & LookedUpObject) | undefined> {
  try {
    const o = await registry.get(def, def.namespaced ? ns : '', name);
    return { ...o, uid: String(o.metadata?.uid ?? ''), deleting: !!o.metadata?.deletionTimestamp };
  } catch (e) {
    if (isApiError(e) && e.code === 404) return undefined;
    throw e;
  }
}

/** Reads objects straight from the registry (strongly consistent, one store read each). */
export function registryLookup(registry: ResourceRegistry): ServiceAccountLookup {
  const def = (r: string): ResourceDefinition => {
    const d = findResource('', 'v1', r);
    if (!d) throw new Error(`resource ${r} is not registered`);
    return d;
  };
  return {
    serviceAccount: (ns, name) => lookedUp(registry, def('serviceaccounts'), ns, name),
    pod: (ns, name) => lookedUp(registry, def('pods'), ns, name),
    node: (name) => lookedUp(registry, def('nodes'), '', name),
    async secret(ns, name) {
      const s = await lookedUp(registry, def('secrets'), ns, name);
      if (!s) return undefined;
      const data = (s as { data?: Record<string, string> }).data;
      return { uid: s.uid, deleting: s.deleting, ...(data?.token ? { token: Buffer.from(data.token, 'base64').toString('utf8') } : {}) };
    },
  };
}

export async function prepareServiceAccounts(c: ServiceAccountOptions, extra: ExtraServiceAccountOptions = {}): Promise<ServiceAccountSetup> {
  let signer: SigningKey | undefined;
  if (c.serviceAccountSigningKeyFile) {
    try {
      signer = await readSigningKey(c.serviceAccountSigningKeyFile);
    } catch (e) {
      throw new StartupError('--service-account-signing-key-file', (e as Error).message, { cause: e });
    }
  }
  let keys: VerificationKey[] = [];
  if (c.serviceAccountKeyFile.length) {
    try {
      keys = await readVerificationKeys(c.serviceAccountKeyFile);
    } catch (e) {
      throw new StartupError('--service-account-key-file', (e as Error).message, { cause: e });
    }
  } else if (c.tlsPrivateKeyFile) {
    // The implicit fallback: a serving key of another type (Ed25519 ...) just verifies nothing.
    try {
      keys = await readVerificationKeys([c.tlsPrivateKeyFile]);
    } catch (e) {
      extra.log?.warn({ err: (e as Error).message }, '--tls-private-key-file cannot verify service-account tokens');
    }
  }
  if (signer) keys.push(verificationKeyOf(createPublicKey(signer.key)));
  keys = uniqueKeys(keys);
  const issuerName = c.serviceAccountIssuer || DEFAULT_ISSUER;
  const apiAudiences = c.serviceAccountApiAudiences.length ? [...c.serviceAccountApiAudiences] : [issuerName];
  let lookup: ServiceAccountLookup | undefined;
  const authenticator = keys.length ? new ServiceAccountTokenAuthenticator({
    keys, issuers: [issuerName], audiences: apiAudiences,
    ...(c.serviceAccountLookup ? { lookup: () => lookup } : {}),
    ...(extra.log ? { log: extra.log } : {}),
  }) : undefined;
  const issuer = signer ? new TokenIssuer({
    signer, issuer: issuerName, apiAudiences,
    ...(extra.maxTokenExpirationSeconds ? { maxExpirationSeconds: extra.maxTokenExpirationSeconds } : {}),
  }) : undefined;
  return {
    ...(authenticator ? { authenticator } : {}), ...(issuer ? { issuer } : {}), issuerName, apiAudiences,
    install(rest) {
      lookup = registryLookup(rest.registry);
      rest.addSubresourceHandler('', 'serviceaccounts', 'token', createTokenRequestHandler(issuer));
    },
  };
}
