/**
 * Response negotiation from the Accept header, the way Kubernetes reads it: clauses ordered by
 * q (highest first, ties in header order; q=0 clauses are dropped), then the first clause the
 * server can satisfy wins; `as=Table`/`as=PartialObjectMetadata` and aggregated discovery
 * (`as=APIGroupDiscoveryList`) are media-type parameters, and `pretty=1` asks for indentation.
 */
import { errors } from '../../../api/meta/status.js';

export type OutputTarget = 'object' | 'table' | 'partial' | 'discovery';

export interface OutputFormat {
  mediaType: 'application/json' | 'application/yaml' | 'application/vnd.kubernetes.protobuf';
  target: OutputTarget;
  /** meta.k8s.io version for Table/PartialObjectMetadata; apidiscovery.k8s.io version for discovery. */
  asVersion?: string;
  pretty?: boolean;
  /** Content-Type to send (aggregated discovery echoes its parameters). */
  contentType?: string;
}

interface Clause { type: string; params: Record<string, string>; q: number }

function parseAccept(accept: string): Clause[] {
  const out: Clause[] = [];
  let ordered = true;
  for (const raw of accept.split(',')) {
    const [type, ...ps] = raw.split(';').map((s) => s.trim());
    if (!type) continue;
    const params: Record<string, string> = {};
    for (const p of ps) {
      const eq = p.indexOf('=');
      if (eq > 0) params[p.slice(0, eq).trim().toLowerCase()] = p.slice(eq + 1).trim().replace(/^"|"$/g, '');
    }
    let q = 1;
    if (params.q !== undefined) {
      q = Number(params.q);
      if (!Number.isFinite(q) || q <= 0) continue;
    }
    if (out.length && q > out[out.length - 1]!.q) ordered = false;
    out.push({ type: type.toLowerCase(), params, q });
  }
  // Array.prototype.sort is stable: equal q keeps the header's order.
  return ordered ? out : out.sort((a, b) => b.q - a.q);
}

function prettyParam(v: string | undefined): boolean | undefined {
  if (v === undefined) return undefined;
  return v !== '0' && v.toLowerCase() !== 'false';
}

const JSONISH = new Set(['application/json', 'application/*', '*/*', '*']);
const SUPPORTED = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf', 'application/json;stream=watch', 'application/vnd.kubernetes.protobuf;stream=watch'];

/**
 * context 'resource' accepts Table/PartialObjectMetadata; 'discovery' accepts aggregated
 * discovery; protobuf is offered only when `protobuf` is true (an encoder exists).
 */
/**
 * Answers by request shape: clients send a handful of distinct Accept headers, so most requests
 * find their (frozen, shared) answer here. Bounded: emptied when full.
 */
const answers = new Map<string, OutputFormat>();
const MAX_ANSWERS = 256;

/**
 * The last answer per context and options (indexed as in negotiateOutput): a request with the
 * same Accept header as the one before is answered by comparing strings, without building and
 * hashing a key (header values are new strings on every request).
 */
const lastAnswers: ({ accept: string | undefined; answer: OutputFormat } | undefined)[] = new Array(8).fill(undefined);

export function negotiateOutput(accept: string | undefined, context: 'resource' | 'discovery', opts: { protobuf?: boolean; pretty?: boolean } = {}): OutputFormat {
  const slot = (context === 'discovery' ? 4 : 0) | (opts.protobuf ? 2 : 0) | (opts.pretty ? 1 : 0);
  const last = lastAnswers[slot];
  if (last !== undefined && last.accept === accept) return last.answer;
  const key = `${context}${opts.protobuf ? 'P' : '-'}${opts.pretty ? 'p' : '-'}${accept ?? ''}`;
  let answer = answers.get(key);
  if (!answer) {
    answer = Object.freeze(negotiate(accept, context, opts));
    if (answers.size >= MAX_ANSWERS) answers.clear();
    answers.set(key, answer);
  }
  lastAnswers[slot] = { accept, answer };
  return answer;
}

function negotiate(accept: string | undefined, context: 'resource' | 'discovery', opts: { protobuf?: boolean; pretty?: boolean }): OutputFormat {
  const clauses = parseAccept(accept ?? '');
  if (!clauses.length) return { mediaType: 'application/json', target: 'object', pretty: opts.pretty };
  for (const c of clauses) {
    const p = c.params;
    const pretty = prettyParam(p.pretty) || opts.pretty;
    let mediaType: OutputFormat['mediaType'];
    if (JSONISH.has(c.type)) mediaType = 'application/json';
    else if (c.type === 'application/yaml') mediaType = 'application/yaml';
    else if (c.type === 'application/vnd.kubernetes.protobuf') { if (!opts.protobuf) continue; mediaType = 'application/vnd.kubernetes.protobuf'; }
    else continue;
    if (p.as === undefined) return { mediaType, target: 'object', pretty };
    if (context === 'resource' && p.g === 'meta.k8s.io' && (p.v === 'v1' || p.v === 'v1beta1')) {
      if (mediaType !== 'application/json') continue;
      if (p.as === 'Table') return { mediaType, target: 'table', asVersion: p.v, pretty };
      if (p.as === 'PartialObjectMetadata' || p.as === 'PartialObjectMetadataList') return { mediaType, target: 'partial', asVersion: p.v, pretty };
    }
    if (context === 'discovery' && p.as === 'APIGroupDiscoveryList' && p.g === 'apidiscovery.k8s.io' && (p.v === 'v2' || p.v === 'v2beta1') && mediaType === 'application/json') {
      return { mediaType, target: 'discovery', asVersion: p.v, pretty, contentType: `application/json;g=apidiscovery.k8s.io;v=${p.v};as=APIGroupDiscoveryList` };
    }
  }
  throw errors.notAcceptable(accept ?? '', SUPPORTED);
}
