/**
 * POST /api/v1/namespaces/NS/serviceaccounts/NAME/token: TokenRequest (authentication.k8s.io/v1).
 *
 * Checks as Kubernetes does: spec.expirationSeconds (default 3600) between 10 minutes and 2^32 s
 * (422 otherwise); the service account must exist (404); a boundObjectRef names a Pod, Secret or
 * Node that must exist, a pod must run as this service account (400), and a uid given in the
 * reference must match the stored one (409). The answer (201) is the request with the defaulted
 * spec (audiences, capped expirationSeconds) and status {token, expirationTimestamp}.
 * Without a signing key the subresource answers 404 with a message naming the missing option.
 */
import { decodeBody } from '../../../api/codec/body.js';
import { ApiError, errors, fieldErrors, type FieldError } from '../../../api/meta/status.js';
import { findResource } from '../../../api/resources/registry.js';
import type { KubeObject, ObjectMeta, ResourceDefinition } from '../../../api/resources/types.js';
import { queryBool } from '../request-info.js';
import { readBody, writeObject } from '../rest/http-io.js';
import { negotiateOutput } from '../rest/negotiate.js';
import type { SubresourceHandler, SubresourceTarget } from '../rest/rest-api.js';
import { headerOf } from '../rest/scope.js';
import type { RefClaim } from '../../../auth/service-account-token.js';
import type { TokenIssuer, TokenSubject } from './token-issuer.js';

const GROUP = 'authentication.k8s.io';
const KIND = 'TokenRequest';
const DEFAULT_EXPIRATION_SECONDS = 3600;
const MIN_EXPIRATION_SECONDS = 600;
const MAX_EXPIRATION_SECONDS = 2 ** 32;

type Dict = Record<string, unknown>;
const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

function requestBody(body: unknown): KubeObject & { spec?: Dict } {
  if (body === undefined) return { apiVersion: `${GROUP}/v1`, kind: KIND };
  if (!isDict(body)) throw errors.badRequest('the request body must be a JSON or YAML object');
  const obj = body as KubeObject & { spec?: Dict };
  if (obj.apiVersion && obj.apiVersion !== `${GROUP}/v1`) {
    throw errors.badRequest(`the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${GROUP}/v1)`);
  }
  if (obj.kind && obj.kind !== KIND) throw errors.badRequest(`the kind in the data (${String(obj.kind)}) does not match the expected kind (${KIND})`);
  return obj;
}

function expirationOf(spec: Dict): number {
  const raw = spec.expirationSeconds;
  const v = raw === undefined || raw === null ? DEFAULT_EXPIRATION_SECONDS : Number(raw);
  const errs: FieldError[] = [];
  if (!Number.isInteger(v)) errs.push(fieldErrors.invalid('spec.expirationSeconds', raw, 'must be an integer'));
  else if (v < MIN_EXPIRATION_SECONDS) errs.push(fieldErrors.invalid('spec.expirationSeconds', v, 'may not specify a duration less than 10 minutes'));
  else if (v > MAX_EXPIRATION_SECONDS) errs.push(fieldErrors.invalid('spec.expirationSeconds', v, 'may not specify a duration larger than 2^32 seconds'));
  if (errs.length) throw errors.invalid(KIND, GROUP, '', errs);
  return v;
}

function defOf(resource: string): ResourceDefinition {
  const d = findResource('', 'v1', resource);
  if (!d) throw errors.internal(`resource ${resource} is not registered`);
  return d;
}

/** Reads the bound object and checks it; returns the claim part for it. */
async function boundObject(ref: Dict, saName: string, t: SubresourceTarget): Promise<Partial<TokenSubject>> {
  const apiVersion = str(ref.apiVersion);
  const kind = str(ref.kind);
  const name = str(ref.name);
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  const version = apiVersion.includes('/') ? apiVersion.slice(apiVersion.indexOf('/') + 1) : apiVersion;
  const resource = group === '' ? ({ Pod: 'pods', Secret: 'secrets', Node: 'nodes' } as Record<string, string>)[kind] : undefined;
  if (!resource) throw errors.badRequest(`cannot bind token to object of type ${group}/${version}, Kind=${kind}`);
  const def = defOf(resource);
  const obj = await t.registry.get(def, def.namespaced ? t.namespace : '', name);
  const uid = str(obj.metadata?.uid);
  if (kind === 'Pod') {
    const podSa = str((obj as { spec?: Dict }).spec?.serviceAccountName) || 'default';
    if (podSa !== saName) throw errors.badRequest(`cannot bind token for serviceaccount "${saName}" to pod running with different serviceaccount name.`);
  }
  const wanted = str(ref.uid);
  if (wanted && wanted !== uid) {
    throw errors.conflict({ group: '', resource: kind, name },
      `the UID in the bound object reference (${wanted}) does not match the UID in record. The object might have been deleted and then recreated`);
  }
  const claim: RefClaim = { name, uid };
  return kind === 'Pod' ? { pod: claim } : kind === 'Secret' ? { secret: claim } : { node: claim };
}

/** The answer to one TokenRequest (the REST-independent part; tests call it directly). */
export async function answerTokenRequest(issuer: TokenIssuer, body: unknown, t: SubresourceTarget): Promise<KubeObject> {
  const req = requestBody(body);
  const spec: Dict = isDict(req.spec) ? { ...req.spec } : {};
  const expirationSeconds = expirationOf(spec);
  const sa = await t.registry.get(t.def, t.namespace, t.name);
  const subject: TokenSubject = {
    namespace: t.namespace,
    serviceAccount: { name: t.name, uid: str(sa.metadata?.uid) },
    ...(isDict(spec.boundObjectRef) ? await boundObject(spec.boundObjectRef, t.name, t) : {}),
  };
  const requested = Array.isArray(spec.audiences) ? spec.audiences.filter((a): a is string => typeof a === 'string') : [];
  const issued = await issuer.issue(subject, requested, expirationSeconds);
  const metadata: ObjectMeta = { ...(isDict(req.metadata) ? req.metadata : {}) };
  if (metadata.creationTimestamp === undefined) metadata.creationTimestamp = null;
  return {
    apiVersion: `${GROUP}/v1`, kind: KIND, metadata,
    spec: { ...spec, audiences: issued.audiences, expirationSeconds: issuer.lifetime(expirationSeconds) },
    status: { token: issued.token, expirationTimestamp: new Date(issued.expiresAt * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z') },
  };
}

/** The REST-layer handler; `issuer` undefined = no signing key configured. */
export function createTokenRequestHandler(issuer: TokenIssuer | undefined): SubresourceHandler {
  return async (ctx, req, res, target) => {
    if (ctx.info.verb !== 'create') throw errors.methodNotAllowed(String(req.method), 'serviceaccounts/token');
    if (!issuer) {
      throw new ApiError(404, 'NotFound',
        'serviceaccounts/token (TokenRequest) is not served: the API server was started without --service-account-signing-key-file');
    }
    const raw = await readBody(req);
    const body = raw.length ? decodeBody(headerOf(req, 'content-type'), raw) : undefined;
    // Admission sees the TokenRequest (NodeRestriction limits a node to tokens bound to its pods).
    const admitting = target.registry.admitSubresource('CREATE', target.def, 'token', target, requestBody(body), undefined,
      { dryRun: ctx.query.get('dryRun') === 'All', request: { user: ctx.user, version: 'v1' } });
    if (admitting) await admitting;
    const object = await answerTokenRequest(issuer, body, target);
    let fmt = negotiateOutput(headerOf(req, 'accept'), 'resource', { protobuf: true, pretty: queryBool(ctx.query.get('pretty')) === true });
    if (fmt.target !== 'object') fmt = { mediaType: 'application/json', target: 'object', pretty: fmt.pretty };
    writeObject(res, 201, object, fmt);
  };
}
