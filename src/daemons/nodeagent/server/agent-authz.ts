/**
 * What a caller of the node agent's secure port may do, as the kubelet decides it.
 *
 * Every request maps to API attributes on this node's Node object: verb from the HTTP method
 * (GET/HEAD get, POST create, PUT update, PATCH patch, DELETE delete), resource `nodes`, name =
 * the node name, subresource from the path (/stats stats, /metrics metrics, /logs log, /spec
 * spec, /checkpoint checkpoint, everything else — /pods, /containerLogs, /exec, /attach,
 * /portForward, /run, /manifests ... — proxy). `--authorization-mode=Webhook` asks the API
 * server with a SubjectAccessReview (authorization.k8s.io/v1); "allowed" answers are cached for
 * --authorization-webhook-cache-authorized-ttl, "denied" ones for
 * --authorization-webhook-cache-unauthorized-ttl, errors never. The API server's own client
 * certificate (corectl-apiserver-nodeagent-client in corectl server) passes as the API server's
 * authorizer allows that user. agent-server.ts also refuses anonymous callers on the paths that
 * start pods or run commands.
 *
 * `checkAgentAccess` is the one gate the secure listener runs per request (plain and upgrade):
 * 401 "Unauthorized" without acceptable credentials, 403 "Forbidden (user=..., verb=...,
 * resource=..., subresource=...)" when denied, 500 "Authorization error (...)" when the review
 * fails — the kubelet's wording, sent as a Status.
 */
import type { IncomingMessage } from 'node:http';
import { pino, type Logger } from 'pino';
import { AlwaysAllowAuthorizer } from '../../../auth/always-allow.js';
import type { Authenticator } from '../../../auth/authenticator.js';
import type { AuthorizationAttributes, AuthorizationResult, Authorizer } from '../../../auth/authorizer.js';
import type { UserInfo } from '../../../auth/user.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { authRequestOf, createAgentAuthenticator, WebhookTokenAuthenticator, type ApiCreate } from './agent-authn.js';
import { TtlCache } from '../../../util/ttl-cache.js';

const SUBJECT_ACCESS_REVIEWS = { group: 'authorization.k8s.io', version: 'v1', resource: 'subjectaccessreviews' };

const VERBS: Record<string, string> = { GET: 'get', HEAD: 'get', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };
const SUBRESOURCES: ReadonlyArray<[string, string]> = [
  ['/stats', 'stats'], ['/metrics', 'metrics'], ['/logs', 'log'], ['/spec', 'spec'], ['/checkpoint', 'checkpoint'],
];

const isSubpath = (path: string, prefix: string): boolean => path === prefix || path.startsWith(`${prefix}/`);

/** The authorization attributes of one request to the agent (kubelet's mapping). */
export function agentRequestAttributes(user: UserInfo, method: string, path: string, nodeName: string): AuthorizationAttributes {
  const subresource = SUBRESOURCES.find(([prefix]) => isSubpath(path, prefix))?.[1] ?? 'proxy';
  return {
    user, verb: VERBS[method.toUpperCase()] ?? '', isResourceRequest: true, path,
    namespace: '', apiGroup: '', apiVersion: 'v1', resource: 'nodes', subresource, name: nodeName,
  };
}

type Dict = Record<string, unknown>;
const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface WebhookAuthorizerOptions {
  readonly create: ApiCreate;
  readonly authorizedTtlMs: number;
  readonly unauthorizedTtlMs: number;
  readonly signal?: AbortSignal;
  readonly now?: () => number;
}

/** SubjectAccessReview per distinct (user, attributes), with the two answer TTLs. */
export class WebhookAuthorizer implements Authorizer {
  readonly name = 'Webhook';
  private readonly cache: TtlCache<AuthorizationResult>;

  constructor(private readonly o: WebhookAuthorizerOptions) {
    this.cache = new TtlCache(4096, o.now);
  }

  async authorize(a: AuthorizationAttributes): Promise<AuthorizationResult> {
    const spec: Dict = {
      user: a.user.name, groups: a.user.groups,
      ...(a.user.uid ? { uid: a.user.uid } : {}),
      ...(a.user.extra && Object.keys(a.user.extra).length ? { extra: a.user.extra } : {}),
    };
    if (a.isResourceRequest) {
      spec.resourceAttributes = {
        namespace: a.namespace, verb: a.verb, group: a.apiGroup, version: a.apiVersion,
        resource: a.resource, subresource: a.subresource, name: a.name,
      };
    } else {
      spec.nonResourceAttributes = { path: a.path, verb: a.verb };
    }
    return this.cache.get(JSON.stringify(spec), () => this.review(spec),
      (r) => (r.decision === 'allow' ? this.o.authorizedTtlMs : this.o.unauthorizedTtlMs));
  }

  private async review(spec: Dict): Promise<AuthorizationResult> {
    const sar = await this.o.create<KubeObject & { status?: Dict }>(SUBJECT_ACCESS_REVIEWS, {
      apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec,
    }, this.o.signal ? { signal: this.o.signal } : {});
    const s = isDict(sar.status) ? sar.status : {};
    const reason = typeof s.reason === 'string' ? s.reason : '';
    if (s.allowed === true) return { decision: 'allow', reason };
    // An evaluation error with no decision is an error, not a denial (never cached).
    if (s.denied !== true && typeof s.evaluationError === 'string' && s.evaluationError) throw new Error(s.evaluationError);
    return { decision: 'deny', reason };
  }
}

export interface AgentAccess {
  readonly authenticator: Authenticator;
  readonly authorizer: Authorizer;
  readonly nodeName: string;
  readonly log?: Logger;
}

export type AccessResult =
  | { ok: true; user: UserInfo }
  | { ok: false; code: 401 | 403 | 500; reason: 'Unauthorized' | 'Forbidden' | 'InternalError'; message: string };

/** The access of an agent built without explicit auth (tests, standalone): certificates + anonymous, AlwaysAllow. */
export function defaultAgentAccess(anonymousAuth: boolean, nodeName: string): AgentAccess {
  return { authenticator: createAgentAuthenticator({ anonymousAuth, clientCa: true }), authorizer: new AlwaysAllowAuthorizer(), nodeName };
}

/** Authenticates and authorizes one request to the secure port. Never throws. */
export async function checkAgentAccess(req: IncomingMessage, path: string, access: AgentAccess): Promise<AccessResult> {
  const log = access.log ?? pino({ level: 'silent' });
  let user: UserInfo;
  try {
    const r = await access.authenticator.authenticate(authRequestOf(req));
    if (!r.ok) {
      if (r.error) log.debug({ err: r.error, path }, 'authentication failed');
      return { ok: false, code: 401, reason: 'Unauthorized', message: 'Unauthorized' };
    }
    user = r.user;
  } catch (e) {
    log.warn({ err: (e as Error).message, path }, 'authentication error');
    return { ok: false, code: 401, reason: 'Unauthorized', message: 'Unauthorized' };
  }
  const attrs = agentRequestAttributes(user, req.method ?? 'GET', path, access.nodeName);
  const what = `user=${user.name}, verb=${attrs.verb}, resource=${attrs.resource}, subresource=${attrs.subresource}`;
  try {
    const d = await access.authorizer.authorize(attrs);
    if (d.decision === 'allow') return { ok: true, user };
    log.debug({ user: user.name, verb: attrs.verb, subresource: attrs.subresource, reason: d.reason }, 'forbidden');
    return { ok: false, code: 403, reason: 'Forbidden', message: `Forbidden (${what})` };
  } catch (e) {
    log.warn({ err: (e as Error).message, user: user.name, path }, 'authorization error');
    return { ok: false, code: 500, reason: 'InternalError', message: `Authorization error (${what})` };
  }
}

export interface AgentAccessConfig {
  readonly anonymousAuth: boolean;
  readonly clientCaFile: string;
  readonly authenticationTokenWebhook: boolean;
  /** Milliseconds. */
  readonly authenticationTokenWebhookCacheTtl: number;
  readonly authorizationMode: string;
  /** Milliseconds. */
  readonly authorizationWebhookCacheAuthorizedTtl: number;
  /** Milliseconds. */
  readonly authorizationWebhookCacheUnauthorizedTtl: number;
}

/**
 * The secure port's access from the options. The webhooks need the API server: without a client
 * (no --coreconfig) they are a start-up error, reported through `fail`.
 */
export function agentAccessFromConfig(c: AgentAccessConfig, o: { nodeName: string; create?: ApiCreate; signal?: AbortSignal; log?: Logger; fail: (message: string) => Error }): AgentAccess {
  const needClient = (option: string): ApiCreate => {
    if (!o.create) throw o.fail(`${option} needs the API server: --coreconfig must name a readable coreconfig file`);
    return o.create;
  };
  const tokenWebhook = c.authenticationTokenWebhook ? new WebhookTokenAuthenticator({
    create: needClient('--authentication-token-webhook'), cacheTtlMs: c.authenticationTokenWebhookCacheTtl,
    ...(o.signal ? { signal: o.signal } : {}), ...(o.log ? { log: o.log } : {}),
  }) : undefined;
  let authorizer: Authorizer;
  if (c.authorizationMode === 'Webhook') {
    authorizer = new WebhookAuthorizer({
      create: needClient('--authorization-mode=Webhook'), authorizedTtlMs: c.authorizationWebhookCacheAuthorizedTtl,
      unauthorizedTtlMs: c.authorizationWebhookCacheUnauthorizedTtl, ...(o.signal ? { signal: o.signal } : {}),
    });
  } else if (c.authorizationMode === 'AlwaysAllow' || c.authorizationMode === '') {
    authorizer = new AlwaysAllowAuthorizer();
  } else {
    throw o.fail(`--authorization-mode: unknown mode "${c.authorizationMode}" (AlwaysAllow or Webhook)`);
  }
  const authenticator = createAgentAuthenticator({ anonymousAuth: c.anonymousAuth, clientCa: c.clientCaFile !== '', ...(tokenWebhook ? { tokenWebhook } : {}) });
  return { authenticator, authorizer, nodeName: o.nodeName, ...(o.log ? { log: o.log } : {}) };
}
