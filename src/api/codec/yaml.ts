/**
 * YAML bodies (kubectl sends YAML only when asked; responses for `Accept: application/yaml`).
 * Decoding reads scalars as Kubernetes' Go YAML library (YAML 1.1) does: 0644 is octal, yes/no
 * are booleans, `<<` merge keys work; timestamps stay strings and no other tags are known.
 * It accepts exactly one document, and bounds the expanded size of the result so that an alias
 * bomb (anchors referencing anchors) is refused with a 400 instead of blowing up later.
 */
import { boolYaml11Tag, CORE_SCHEMA, dump, floatYaml11Tag, intYaml11Tag, loadAll, mergeTag, nullYaml11Tag } from 'js-yaml';
import { errors } from '../meta/status.js';

export const YAML_MEDIA_TYPE = 'application/yaml';
/** Nodes (values) the decoded document may expand to, aliases counted at every use. */
export const MAX_YAML_NODES = 1_000_000;
export const MAX_YAML_DEPTH = 10000;

const LOAD_SCHEMA = CORE_SCHEMA.withTags(boolYaml11Tag, intYaml11Tag, floatYaml11Tag, nullYaml11Tag, mergeTag);

function checkExpansion(doc: unknown): void {
  let nodes = 0;
  const stack: Array<{ v: unknown; depth: number }> = [{ v: doc, depth: 0 }];
  while (stack.length) {
    const { v, depth } = stack.pop()!;
    if (++nodes > MAX_YAML_NODES) throw errors.badRequest(`the YAML document expands to more than ${MAX_YAML_NODES} values`);
    if (depth > MAX_YAML_DEPTH) throw errors.badRequest(`the YAML document is nested too deeply: the limit is ${MAX_YAML_DEPTH} levels`);
    if (v !== null && typeof v === 'object') {
      for (const c of Array.isArray(v) ? v : Object.values(v)) stack.push({ v: c, depth: depth + 1 });
    }
  }
}

export function decodeYaml(buf: Buffer): unknown {
  let docs: unknown[];
  try {
    docs = loadAll(buf.toString('utf8'), { schema: LOAD_SCHEMA, maxDepth: MAX_YAML_DEPTH });
  } catch (e) {
    throw errors.badRequest(`the request body is not valid YAML: ${(e as Error).message}`);
  }
  if (docs.length > 1) throw errors.badRequest('the request body holds more than one YAML document; send one object per request');
  const doc = docs.length ? docs[0] : null;
  checkExpansion(doc);
  // Round-trip through JSON so that the result is plain JSON data (no shared alias references).
  return doc === undefined ? null : JSON.parse(JSON.stringify(doc)) as unknown;
}

export function encodeYaml(obj: unknown): Buffer {
  // As Kubernetes' YAML (JSON through Go's YAML library): keys sorted, a list's items at its key's indent.
  // seqNoIndent and double quotes as Go's YAML library writes them (js-yaml's typings lag its options).
  const options = { noRefs: true, lineWidth: -1, sortKeys: true, seqNoIndent: true, quoteStyle: 'double' } as Parameters<typeof dump>[1];
  return Buffer.from(dump(obj, options), 'utf8');
}
