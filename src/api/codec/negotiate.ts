/**
 * Output negotiation from the Accept header, as the Kubernetes API server does it:
 * an ordered list of media ranges (q values honoured, ties keep header order); the parameters
 * `as`/`g`/`v` ask for a meta.k8s.io conversion (Table, PartialObjectMetadata[List]),
 * `stream=watch` marks a watch media type, `pretty` asks for indentation; other parameters are
 * ignored. `*\/*`, `application/*` and a missing header mean JSON. No match means 406.
 */
import { JSON_MEDIA_TYPE } from './json.js';
import { PROTOBUF_MEDIA_TYPE } from './protobuf.js';
import { YAML_MEDIA_TYPE } from './yaml.js';

export type OutputMediaType = 'application/json' | 'application/yaml' | 'application/vnd.kubernetes.protobuf';
export type ConversionKind = 'Table' | 'PartialObjectMetadata' | 'PartialObjectMetadataList';

export interface NegotiatedOutput {
  mediaType: OutputMediaType;
  as?: ConversionKind;
  asGroup?: string;
  asVersion?: string;
  pretty?: boolean;
}

/** The media types the server can answer with, for 406 messages. */
export const SUPPORTED_OUTPUT_MEDIA_TYPES: readonly OutputMediaType[] = [JSON_MEDIA_TYPE, YAML_MEDIA_TYPE, PROTOBUF_MEDIA_TYPE];

interface Clause {
  type: string;
  subtype: string;
  params: Map<string, string>;
  q: number;
  order: number;
}

function parseAccept(accept: string): Clause[] {
  const out: Clause[] = [];
  accept.split(',').forEach((part, order) => {
    const [range, ...rawParams] = part.split(';');
    const [type, subtype] = range.trim().toLowerCase().split('/');
    if (!type || subtype === undefined) return;
    const params = new Map<string, string>();
    for (const p of rawParams) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      params.set(p.slice(0, eq).trim().toLowerCase(), p.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1'));
    }
    const qText = params.get('q');
    const q = qText === undefined ? 1 : Number(qText);
    out.push({ type, subtype: subtype.trim(), params, q: Number.isFinite(q) ? q : 0, order });
  });
  return out.filter((c) => c.q > 0).sort((a, b) => b.q - a.q || a.order - b.order);
}

const CONVERSIONS: ReadonlySet<string> = new Set(['Table', 'PartialObjectMetadata', 'PartialObjectMetadataList']);

function mediaTypeOf(c: Clause): OutputMediaType | undefined {
  if (c.type === '*' && c.subtype === '*') return JSON_MEDIA_TYPE;
  if (c.type !== 'application') return undefined;
  switch (c.subtype) {
    case '*': case 'json': return JSON_MEDIA_TYPE;
    case 'yaml': return YAML_MEDIA_TYPE;
    case 'vnd.kubernetes.protobuf': return PROTOBUF_MEDIA_TYPE;
    default: return undefined;
  }
}

function truthy(v: string | undefined): boolean {
  return v !== undefined && v !== '0' && v.toLowerCase() !== 'false';
}

export function negotiateOutput(accept: string | undefined, opts: { stream?: boolean } = {}): NegotiatedOutput | undefined {
  if (accept === undefined || accept.trim() === '') return { mediaType: JSON_MEDIA_TYPE };
  for (const c of parseAccept(accept)) {
    const mediaType = mediaTypeOf(c);
    if (!mediaType) continue;
    const stream = c.params.get('stream');
    if (stream !== undefined && stream !== 'watch') continue;
    const result: NegotiatedOutput = { mediaType };
    const as = c.params.get('as');
    if (as !== undefined) {
      const g = c.params.get('g') ?? '';
      const v = c.params.get('v') ?? '';
      if (!CONVERSIONS.has(as) || g !== 'meta.k8s.io' || (v !== 'v1' && v !== 'v1beta1')) continue;
      // Table has no protobuf (or YAML stream) form; a watch never converts to a list kind.
      if (as === 'Table' && mediaType !== JSON_MEDIA_TYPE) continue;
      if (opts.stream && as === 'PartialObjectMetadataList') continue;
      result.as = as as ConversionKind;
      result.asGroup = g;
      result.asVersion = v;
    }
    if (truthy(c.params.get('pretty'))) result.pretty = true;
    return result;
  }
  return undefined;
}

/** The Content-Type of a response: JSON watches are plain JSON; other watches add stream=watch. */
export function contentTypeFor(result: NegotiatedOutput, stream = false): string {
  let ct: string = result.mediaType;
  if (stream && result.mediaType !== JSON_MEDIA_TYPE) ct += ';stream=watch';
  if (result.as) ct += `;as=${result.as};g=${result.asGroup ?? 'meta.k8s.io'};v=${result.asVersion ?? 'v1'}`;
  return ct;
}
