/**
 * Conversions between the contract's types and etcd's wire types: key-value pairs
 * (etcd sends 64-bit numbers as decimal strings), key ranges as byte strings.
 */
import type { IKeyValue } from 'etcd3';
import type { KeyValue } from '../interface.js';
import { StorageError } from '../errors.js';

const EMPTY = Buffer.alloc(0);

export function toKeyValue(kv: IKeyValue): KeyValue {
  return {
    key: kv.key.toString('utf8'),
    value: kv.value ?? EMPTY,
    createRevision: Number(kv.create_revision),
    modRevision: Number(kv.mod_revision),
    version: Number(kv.version),
  };
}

/** A key as bytes; empty keys are rejected (etcd has no empty key). */
export function keyBytes(key: string): Buffer {
  if (typeof key !== 'string' || key.length === 0) throw new StorageError('InvalidArgument', 'etcd: empty key', { key });
  return Buffer.from(key, 'utf8');
}

/** The byte-wise successor of a prefix: every key starting with it sorts below it. */
export function prefixEndBytes(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]!++;
      return end.subarray(0, i + 1);
    }
  }
  // All 0xff: etcd reads "\0" as range end as "to the end of the keyspace".
  return Buffer.from([0]);
}

/** The smallest key after `key`: key + "\0". */
export function keySuccessor(key: Buffer): Buffer {
  return Buffer.concat([key, Buffer.from([0])]);
}

/** A revision from etcd's wire format (decimal string) as a number. */
export function rev(v: string | number | undefined | null): number {
  return v === undefined || v === null ? 0 : Number(v);
}
