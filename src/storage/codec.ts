/**
 * How objects are encoded as stored bytes. The object store clears
 * metadata.resourceVersion before encoding (the revision is the truth, never the stored field)
 * and sets it from the key's modRevision after decoding.
 */
import type { KubeObject } from '../api/resources/types.js';
import { StorageError } from './errors.js';

export interface ObjectCodec {
  /** A short name for logs ('json', 'protobuf'). */
  readonly name?: string;
  encode(obj: KubeObject): Buffer;
  decode(buf: Buffer): KubeObject;
}

export const jsonCodec: ObjectCodec & { decodeText(text: string): KubeObject } = {
  name: 'json',
  encode(obj: KubeObject): Buffer {
    return Buffer.from(JSON.stringify(obj), 'utf8');
  },
  decode(buf: Buffer): KubeObject {
    return jsonCodec.decodeText(buf.toString('utf8'));
  },
  /** decode() of the bytes that hold `text`. */
  decodeText(text: string): KubeObject {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch (e) {
      throw new StorageError('Internal', `stored object is not valid JSON: ${(e as Error).message}`, {}, { cause: e });
    }
    if (v === null || typeof v !== 'object' || Array.isArray(v)) {
      throw new StorageError('Internal', 'stored object is not a JSON object');
    }
    return v as KubeObject;
  },
};
