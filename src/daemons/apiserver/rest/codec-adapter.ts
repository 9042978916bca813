/**
 * The one place the REST layer touches body codecs (the schema helper's src/api/codec):
 * request decoding by Content-Type and optional protobuf output.
 */
import { decodeBody } from '../../../api/codec/body.js';
import { encodeProtobuf } from '../../../api/codec/protobuf.js';
import { errors } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';

/** Decodes a request body into a JSON object (of kind `into`, when known); 400 when it is not an object. */
export function decodeObject(contentType: string | undefined, body: Buffer, into?: string): KubeObject {
  const v = decodeBody(contentType, body, into);
  if (v === undefined) throw errors.badRequest('the request body is empty');
  return asObject(v);
}

/** A decoded body as an object; 400 when it is not one. */
export function asObject(v: unknown): KubeObject {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw errors.badRequest('the request body must be a JSON or YAML object');
  return v as KubeObject;
}

/** Any JSON value (patch bodies, DeleteOptions of kind `into`); undefined for an empty body. */
export function decodeValue(contentType: string | undefined, body: Buffer, into?: string): unknown {
  return decodeBody(contentType, body, into);
}

/** Protobuf encoding when the schema knows the kind; undefined otherwise (callers fall back to JSON). */
export function encodeProtobufOrUndefined(obj: unknown): Buffer | undefined {
  try {
    return encodeProtobuf(obj as KubeObject);
  } catch {
    return undefined;
  }
}
