/**
 * The service account token controller (legacy token Secrets).
 *
 * Secrets of type `kubernetes.io/service-account-token` that name a ServiceAccount in the
 * annotation `kubernetes.io/service-account.name` get `token` (a JWT signed with
 * --service-account-private-key-file), `ca.crt` (--root-ca-file, else the fallbackRootCa
 * option), `namespace`, and the annotation `kubernetes.io/service-account.uid`. Such a Secret whose ServiceAccount
 * does not exist (or has another uid) is deleted, and so are the token Secrets of a deleted
 * ServiceAccount.
 *
 * Decision: like Kubernetes 1.24 and later, no token Secret is created per ServiceAccount by
 * default; users ask for one by creating the annotated Secret. `autoCreateSecrets: true`
 * restores the old behaviour (one `<sa>-token-xxxxx` Secret per ServiceAccount, listed in its
 * `secrets`); the controller manager has no option for it, so the registry passes false.
 *
 * Without --service-account-private-key-file the controller logs once and does nothing.
 *
 * Contract: keys are `sa:ns/name` or `secret:ns/name`; one key is synced by one worker at a
 * time; secrets are written with their resourceVersion (compare-and-swap), a conflict retries.
 */
import { createHash, createPrivateKey, createPublicKey, randomBytes, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { SignJWT } from 'jose';
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { deletedObject, keyOf, splitKey, WorkQueue, type ResourceRef, type RestClient, type SharedIndexInformer } from '../deps.js';

const SERVICE_ACCOUNTS: ResourceRef = { group: '', version: 'v1', resource: 'serviceaccounts' };
const SECRETS: ResourceRef = { group: '', version: 'v1', resource: 'secrets' };

export const SA_TOKEN_TYPE = 'kubernetes.io/service-account-token';
export const SA_NAME_ANNOTATION = 'kubernetes.io/service-account.name';
export const SA_UID_ANNOTATION = 'kubernetes.io/service-account.uid';
export const LEGACY_ISSUER = 'kubernetes/serviceaccount';

/** A loaded signing key: the algorithm follows the key type (RSA → RS256, EC → ES256/384/512). */
export interface TokenSigner { key: KeyObject; alg: string; kid: string }

export function signerFromPem(pem: string | Buffer): TokenSigner {
  const key = createPrivateKey(pem);
  let alg: string;
  if (key.asymmetricKeyType === 'rsa') alg = 'RS256';
  else if (key.asymmetricKeyType === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    alg = curve === 'secp384r1' ? 'ES384' : curve === 'secp521r1' ? 'ES512' : curve === 'prime256v1' ? 'ES256' : '';
    if (!alg) throw new Error(`unsupported EC curve ${String(curve)} in the service account key`);
  } else throw new Error(`unsupported service account key type ${String(key.asymmetricKeyType)}: use RSA or ECDSA`);
  // Kubernetes' key id: the base64url SHA-256 of the DER public key.
  const der = createPublicKey(key).export({ type: 'spki', format: 'der' });
  return { key, alg, kid: createHash('sha256').update(der).digest('base64url') };
}

/** The legacy (non-expiring) token of a service account, as stored in token Secrets. */
export async function legacyToken(signer: TokenSigner, namespace: string, saName: string, saUid: string, secretName: string): Promise<string> {
  return new SignJWT({
    'kubernetes.io/serviceaccount/namespace': namespace,
    'kubernetes.io/serviceaccount/secret.name': secretName,
    'kubernetes.io/serviceaccount/service-account.name': saName,
    'kubernetes.io/serviceaccount/service-account.uid': saUid,
  }).setProtectedHeader({ alg: signer.alg, kid: signer.kid })
    .setIssuer(LEGACY_ISSUER)
    .setSubject(`system:serviceaccount:${namespace}:${saName}`)
    .sign(signer.key);
}

export interface ServiceAccountTokenControllerOptions {
  /** Create one token Secret per ServiceAccount (pre-1.24 behaviour). @default false */
  autoCreateSecrets?: boolean;
  /**
   * `ca.crt` when --root-ca-file is not given (Kubernetes uses the CA of the controller
   * manager's own API connection). Without either, `ca.crt` is left out.
   */
  fallbackRootCa?: Buffer;
}

type Dict = Record<string, unknown>;
const b64 = (s: string | Buffer): string => Buffer.from(s).toString('base64');

export class ServiceAccountTokenController implements Controller {
  readonly name = 'serviceaccount-token';
  private queue!: WorkQueue;
  private accounts!: SharedIndexInformer;
  private secrets!: SharedIndexInformer;
  private client!: RestClient;
  private log!: Logger;
  private signer!: TokenSigner;
  private rootCa: Buffer | undefined;
  /** Accounts we made a secret for (the secret informer may not show it yet). */
  private readonly createdFor = new Set<string>();

  constructor(private readonly opts: ServiceAccountTokenControllerOptions = {}) {}

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    if (!ctx.config.serviceAccountPrivateKeyFile) {
      ctx.log.warn('no --service-account-private-key-file: the service account token controller does nothing');
      await new Promise<void>((resolve) => { if (ctx.signal.aborted) resolve(); else ctx.signal.addEventListener('abort', () => resolve(), { once: true }); });
      return;
    }
    this.signer = signerFromPem(await readFile(ctx.config.serviceAccountPrivateKeyFile));
    this.rootCa = ctx.config.rootCaFile ? await readFile(ctx.config.rootCaFile) : this.opts.fallbackRootCa;
    this.queue = new WorkQueue({ name: this.name, log: ctx.log });
    this.accounts = ctx.informers.informerFor(SERVICE_ACCOUNTS);
    this.secrets = ctx.informers.informerFor({ ...SECRETS, fieldSelector: `type=${SA_TOKEN_TYPE}` });
    this.accounts.addEventHandler({
      onAdd: (sa) => this.queue.add(`sa:${keyOf(sa)}`),
      onUpdate: (_o, sa) => this.queue.add(`sa:${keyOf(sa)}`),
      onDelete: (x) => this.accountDeleted(deletedObject(x)),
    });
    this.secrets.addEventHandler({
      onAdd: (s) => this.queue.add(`secret:${keyOf(s)}`),
      onUpdate: (_o, s) => this.queue.add(`secret:${keyOf(s)}`),
    });
    ctx.informers.start(ctx.signal);
    const synced = await Promise.all([this.accounts.waitForSync(ctx.signal), this.secrets.waitForSync(ctx.signal)]);
    if (!synced.every(Boolean)) return;
    await this.queue.runWorkers(ctx.config.concurrentServiceaccountTokenSyncs, (key) => this.sync(key), ctx.signal);
  }

  /** The token Secrets of a deleted account go with it. */
  private accountDeleted(sa: KubeObject): void {
    for (const s of this.secrets.indexer.listNamespace(sa.metadata?.namespace ?? '')) {
      if (s.metadata?.annotations?.[SA_NAME_ANNOTATION] === sa.metadata?.name) this.queue.add(`secret:${keyOf(s)}`);
    }
  }

  async sync(key: string): Promise<void> {
    if (key.startsWith('sa:')) return this.syncAccount(key.slice(3));
    if (key.startsWith('secret:')) return this.syncSecret(key.slice(7));
  }

  /** The account, from the cache or (on a miss, e.g. created together with its secret) the server. */
  private async account(namespace: string, name: string): Promise<KubeObject | undefined> {
    const cached = this.accounts.indexer.get(namespace, name);
    if (cached) return cached;
    try {
      return await this.client.get({ ...SERVICE_ACCOUNTS, namespace }, name);
    } catch (e) {
      if (isApiError(e) && e.code === 404) return undefined;
      throw e;
    }
  }

  private async syncSecret(key: string): Promise<void> {
    const { namespace = '', name } = splitKey(key);
    const cached = this.secrets.indexer.getByKey(key);
    if (!cached || cached.metadata?.deletionTimestamp) return;
    const ann = cached.metadata?.annotations ?? {};
    const saName = ann[SA_NAME_ANNOTATION] ?? '';
    const sa = saName ? await this.account(namespace, saName) : undefined;
    const wantUid = ann[SA_UID_ANNOTATION];
    if (!sa || (wantUid && wantUid !== sa.metadata?.uid)) {
      try {
        await this.client.delete({ ...SECRETS, namespace }, name, { preconditions: { uid: cached.metadata?.uid ?? '' } });
        this.log.info({ secret: key, serviceAccount: saName }, 'deleted token secret of a missing service account');
      } catch (e) {
        if (!(isApiError(e) && (e.code === 404 || e.code === 409))) throw e;
      }
      return;
    }
    const data = (cached.data ?? {}) as Record<string, string>;
    const caWanted = this.rootCa ? b64(this.rootCa) : undefined;
    const complete = data.token && data.namespace === b64(namespace) && (!caWanted || data['ca.crt'] === caWanted) && wantUid === sa.metadata?.uid;
    if (complete) return;
    // Work on a fresh copy: the cache may lag behind a write of ours.
    let live: KubeObject;
    try { live = await this.client.get({ ...SECRETS, namespace }, name); } catch (e) { if (isApiError(e) && e.code === 404) return; throw e; }
    if (live.metadata?.uid !== cached.metadata?.uid) return;
    const liveData = { ...((live.data ?? {}) as Record<string, string>) };
    const annotations = { ...(live.metadata?.annotations ?? {}), [SA_UID_ANNOTATION]: sa.metadata?.uid ?? '' };
    if (!liveData.token) liveData.token = b64(await legacyToken(this.signer, namespace, saName, sa.metadata?.uid ?? '', name));
    liveData.namespace = b64(namespace);
    if (caWanted) liveData['ca.crt'] = caWanted;
    await this.client.update({ ...SECRETS, namespace }, { ...live, metadata: { ...live.metadata, annotations }, data: liveData });
    this.log.info({ secret: key, serviceAccount: saName }, 'populated token secret');
  }

  private async syncAccount(key: string): Promise<void> {
    if (!this.opts.autoCreateSecrets) return;
    const sa = this.accounts.indexer.getByKey(key);
    if (!sa || sa.metadata?.deletionTimestamp) return;
    const namespace = sa.metadata?.namespace ?? '';
    const saName = sa.metadata?.name ?? '';
    const has = this.secrets.indexer.listNamespace(namespace).some((s) =>
      s.metadata?.annotations?.[SA_NAME_ANNOTATION] === saName && s.metadata?.annotations?.[SA_UID_ANNOTATION] === sa.metadata?.uid);
    if (has || this.createdFor.has(sa.metadata?.uid ?? '')) return;
    const secretName = `${saName}-token-${randomBytes(4).toString('hex').slice(0, 5)}`;
    const token = await legacyToken(this.signer, namespace, saName, sa.metadata?.uid ?? '', secretName);
    const data: Record<string, string> = { token: b64(token), namespace: b64(namespace) };
    if (this.rootCa) data['ca.crt'] = b64(this.rootCa);
    try {
      await this.client.create({ ...SECRETS, namespace }, {
        apiVersion: 'v1', kind: 'Secret', type: SA_TOKEN_TYPE, data,
        metadata: { name: secretName, namespace, annotations: { [SA_NAME_ANNOTATION]: saName, [SA_UID_ANNOTATION]: sa.metadata?.uid ?? '' } },
      });
    } catch (e) {
      if (isApiError(e) && (e.code === 403 || e.code === 404)) return;
      throw e;
    }
    this.createdFor.add(sa.metadata?.uid ?? '');
    const refs = [...(((sa as Dict).secrets ?? []) as Array<{ name: string }>), { name: secretName }];
    try {
      await this.client.patch({ ...SERVICE_ACCOUNTS, namespace }, saName, 'merge', { metadata: { uid: sa.metadata?.uid, resourceVersion: sa.metadata?.resourceVersion }, secrets: refs });
    } catch (e) {
      // The secret exists either way; the reference list is informative.
      if (!(isApiError(e) && (e.code === 404 || e.code === 409))) throw e;
    }
  }
}

export function newServiceAccountTokenController(opts: ServiceAccountTokenControllerOptions = {}): Controller {
  return new ServiceAccountTokenController(opts);
}
