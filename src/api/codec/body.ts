/**
 * Request bodies by Content-Type. Parameters (charset ...) are ignored; an empty or missing
 * Content-Type means JSON; anything else unknown is 415. An empty body decodes to undefined
 * (DELETE without options, for instance): the caller decides whether that is allowed.
 */
import { errors } from '../meta/status.js';
import { decodeJson, JSON_MEDIA_TYPE } from './json.js';
import { decodeProtobuf, PROTOBUF_MEDIA_TYPE } from './protobuf.js';
import { decodeYaml, YAML_MEDIA_TYPE } from './yaml.js';

/** The bare media type of a Content-Type value, lower-cased, without parameters. */
export function mediaTypeOf(contentType: string | undefined): string {
  if (contentType === JSON_MEDIA_TYPE) return contentType; // nearly every request: already bare
  return (contentType ?? '').split(';')[0].trim().toLowerCase();
}

/** `into`: the kind the body should be (protobuf decoding errors name it, as Kubernetes' do). */
export function decodeBody(contentType: string | undefined, body: Buffer, into?: string): unknown {
  const mt = mediaTypeOf(contentType);
  if (body.length === 0) {
    if (mt === '' || mt === JSON_MEDIA_TYPE || mt === YAML_MEDIA_TYPE || mt === PROTOBUF_MEDIA_TYPE || mt.endsWith('+json') || mt === 'application/x-yaml' || mt === 'text/yaml') return undefined;
    throw errors.unsupportedMediaType(contentType ?? '');
  }
  switch (mt) {
    case '': case JSON_MEDIA_TYPE:
    // Patch bodies are JSON too; the patch type itself is the REST layer's business.
    case 'application/json-patch+json': case 'application/merge-patch+json':
    case 'application/strategic-merge-patch+json': case 'application/apply-patch+json':
      return decodeJson(body);
    case YAML_MEDIA_TYPE: case 'application/x-yaml': case 'text/yaml': case 'application/apply-patch+yaml':
      return decodeYaml(body);
    case PROTOBUF_MEDIA_TYPE:
      return decodeProtobuf(body, into);
    default:
      throw errors.unsupportedMediaType(contentType ?? '');
  }
}
