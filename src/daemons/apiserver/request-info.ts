/**
 * Request info: what a URL and method mean to the API (verb, group, version, namespace, resource,
 * name, subresource). Follows Kubernetes' RequestInfoFactory so authorization, limits, metrics and
 * the REST layer agree on one reading of every request.
 *
 *   /api/v1/namespaces/ns/pods/p/log   → get  "" v1 ns pods p log
 *   /apis/apps/v1/deployments?watch=1  → watch apps v1 "" deployments
 *   /api/v1/namespaces/foo             → the Namespace object "foo" itself (namespace "foo", name "foo")
 *   /healthz                            → non-resource, verb "get"
 */

export interface RequestInfo {
  isResourceRequest: boolean;
  /** The URL path as received (not decoded further). */
  path: string;
  /**
   * get list watch create update patch delete deletecollection proxy connect for resource
   * requests; the lowercase HTTP method for non-resource requests.
   */
  verb: string;
  apiPrefix: 'api' | 'apis' | '';
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
  /** The path parts from the resource on (resource/name/subresource/...). */
  parts: string[];
}

/** `/namespaces/NAME/<this>` names a subresource of the Namespace, not a namespaced resource. */
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);
/** Legacy `/apis/G/V/watch/...` and `/api/v1/proxy/...` forms. */
const SPECIAL_VERBS = new Set(['proxy', 'watch']);
/**
 * Streaming subresources reached with an upgrade or proxied: reported with verb `connect` so
 * the REST layer and the limits treat them alike. (Kubernetes authorizes these as create/get by
 * method; an RBAC authorizer maps `connect` back using the HTTP method.)
 */
const CONNECT_SUBRESOURCES: Record<string, Set<string>> = {
  pods: new Set(['exec', 'attach', 'portforward', 'proxy']),
  services: new Set(['proxy']),
  nodes: new Set(['proxy']),
};

/**
 * A query boolean as Kubernetes reads it: absent → undefined; Go ParseBool false spellings
 * (`0 f F false FALSE False`, case-insensitively for "false") → false; anything else, including
 * an empty value (`?watch`), → true. Python sends `watch=True`.
 */
export function queryBool(value: string | null | undefined): boolean | undefined {
  if (value === null || value === undefined) return undefined;
  const v = value.toLowerCase();
  return !(v === '0' || v === 'f' || v === 'false');
}

/** The value of `metadata.name=X` / `metadata.name==X` when the field selector requires it exactly. */
function exactNameFromFieldSelector(selector: string | null): string {
  if (!selector) return '';
  let found = '';
  for (const term of selector.split(',')) {
    const m = /^\s*metadata\.name\s*==?\s*(.*?)\s*$/.exec(term);
    if (m && !term.includes('!=')) found = m[1] ?? '';
  }
  // Only a valid path segment can stand for a name.
  if (found === '' || found === '.' || found === '..' || /[/%]/.test(found)) return '';
  return found;
}

/**
 * A segment with its percent escapes decoded, as Go's URL.Path (which Kubernetes splits) gives
 * it: `system%3Acontroller%3Ax` names `system:controller:x`. An escape that is no valid UTF-8
 * leaves the segment as it came.
 */
function decodeSegment(seg: string): string {
  if (seg.indexOf('%') < 0) return seg;
  try {
    return decodeURIComponent(seg);
  } catch {
    return seg;
  }
}

/** The path's segments without leading and trailing slashes ('' for none), percent escapes decoded. */
function splitPath(path: string): string[] {
  const parts = splitRaw(path);
  if (path.indexOf('%') >= 0) for (let i = 0; i < parts.length; i++) parts[i] = decodeSegment(parts[i]!);
  return parts;
}

function splitRaw(path: string): string[] {
  let start = 0;
  let end = path.length;
  while (start < end && path.charCodeAt(start) === 47) start++;
  while (end > start && path.charCodeAt(end - 1) === 47) end--;
  // A loop of indexOf and slice instead of slice().split('/'), which makes one more string and
  // takes V8's runtime path; the loop took half the time in a micro-benchmark (every request
  // comes through here).
  const parts: string[] = [];
  if (start === end) return parts;
  for (let i = start; ;) {
    const j = path.indexOf('/', i);
    if (j < 0 || j >= end) {
      parts.push(path.slice(i, end));
      return parts;
    }
    parts.push(path.slice(i, j));
    i = j + 1;
  }
}

/** The verb of an HTTP method on a resource ('' for methods without one), as Kubernetes' request info reads it. */
export function verbForMethod(method: string): string {
  switch (method) {
    case 'POST': return 'create';
    case 'GET': case 'HEAD': return 'get';
    case 'PUT': return 'update';
    case 'PATCH': return 'patch';
    case 'DELETE': return 'delete';
  }
  // Methods arrive upper-case from both listeners; lower-case ones are read the same way.
  const upper = method.toUpperCase();
  return upper === method ? '' : verbForMethod(upper);
}

/** Reads a request the way Kubernetes' RequestInfoFactory does (see the file comment). */
export function parseRequestInfo(method: string, url: { readonly pathname: string; readonly searchParams: URLSearchParams }): RequestInfo {
  const info: RequestInfo = {
    isResourceRequest: false, path: url.pathname, verb: method.toLowerCase(),
    apiPrefix: '', apiGroup: '', apiVersion: '', namespace: '', resource: '', subresource: '',
    name: '', parts: [],
  };
  const all = splitPath(url.pathname);
  const prefix = all[0];
  if (all.length < 3 || (prefix !== 'api' && prefix !== 'apis')) {
    return info;
  }
  let at = 1;
  if (prefix === 'apis') {
    // /apis/G/V alone is discovery (non-resource); a resource needs /apis/G/V/R at least.
    if (all.length < 4) return info;
    info.apiGroup = all[1]!;
    at = 2;
  }
  info.apiPrefix = prefix;
  info.isResourceRequest = true;
  info.apiVersion = all[at]!;
  // The parts are all[p...]: moving `p` instead of slicing leaves one copy, made at the end.
  let p = at + 1;
  const first = all[p];
  if (first !== undefined && SPECIAL_VERBS.has(first)) {
    info.verb = first;
    if (all.length - p < 2) {
      // "/apis/G/V/watch" alone names nothing; leave it for the REST layer's 404.
      info.parts = [];
      return info;
    }
    p++;
  } else {
    info.verb = verbForMethod(method);
  }

  const n = all.length - p;
  if (all[p] === 'namespaces' && n > 1) {
    info.namespace = all[p + 1]!;
    // /namespaces/NS/R... is a namespaced resource; /namespaces/NS[/status|/finalize] is
    // the Namespace object itself, so the parts keep "namespaces" as the resource.
    if (n > 2 && !NAMESPACE_SUBRESOURCES.has(all[p + 2]!)) p += 2;
  }
  const parts = p === 0 ? all : all.slice(p);
  info.parts = parts;

  // parts: resource/name/subresource/anything-else (proxy keeps the rest as the proxied path)
  if (parts.length >= 3 && info.verb !== 'proxy') info.subresource = parts[2]!;
  if (parts.length >= 2) info.name = parts[1]!;
  if (parts.length >= 1) info.resource = parts[0]!;

  if (info.name === '' && info.verb === 'get') {
    info.verb = queryBool(url.searchParams.get('watch')) ? 'watch' : 'list';
    info.name = exactNameFromFieldSelector(url.searchParams.get('fieldSelector'));
  }
  if (info.name === '' && info.verb === 'delete') info.verb = 'deletecollection';

  if (info.subresource && info.name && CONNECT_SUBRESOURCES[info.resource]?.has(info.subresource)) {
    info.verb = 'connect';
  }
  return info;
}

/**
 * Long-running requests are exempt from the in-flight limit and the request timeout: watches,
 * proxies, streaming subresources (exec, attach, portforward, proxy) and followed logs.
 */
export function isLongRunningRequest(info: RequestInfo, query: URLSearchParams): boolean {
  if (!info.isResourceRequest) return false;
  if (info.verb === 'watch' || info.verb === 'proxy' || info.verb === 'connect') return true;
  // As Kubernetes' long-running check: proxied requests and the streaming subresources.
  if (info.subresource === 'proxy' || info.subresource === 'exec' || info.subresource === 'attach' || info.subresource === 'portforward') return true;
  if (info.subresource === 'log' && queryBool(query.get('follow')) === true) return true;
  return false;
}

/** Reads (get, list, watch and non-resource GET/HEAD) versus writes, for the two in-flight pools. */
export function isReadOnlyRequest(info: RequestInfo): boolean {
  if (!info.isResourceRequest) return info.verb === 'get' || info.verb === 'head' || info.verb === 'options';
  return info.verb === 'get' || info.verb === 'list' || info.verb === 'watch';
}
