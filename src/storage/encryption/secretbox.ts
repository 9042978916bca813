/**
 * NaCl secretbox (XSalsa20 stream cipher + Poly1305 one-time authenticator), written from the
 * NaCl specification because node:crypto has neither Salsa20 nor a standalone Poly1305.
 *
 *   subkey  = HSalsa20(key, nonce[0..16])
 *   stream  = Salsa20(subkey, nonce[16..24]) keystream, block counter from 0
 *   polyKey = stream[0..32];  c = m XOR stream[32 ..]
 *   box     = Poly1305(polyKey, c) || c       (tag first, 16 bytes)
 *
 * Verified against the NaCl/libsodium crypto_box_afternm known-answer vector (tests).
 * Not constant-time in the Poly1305 arithmetic (BigInt); acceptable for at-rest encryption of
 * stored objects, where the attacker does not time the apiserver's decryption.
 */
import { timingSafeEqual } from 'node:crypto';

export const SECRETBOX_KEY_BYTES = 32;
export const SECRETBOX_NONCE_BYTES = 24;
export const SECRETBOX_TAG_BYTES = 16;

const SIGMA = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574]; // "expand 32-byte k"

function rotl(v: number, c: number): number {
  return (v << c) | (v >>> (32 - c));
}

/** 20 rounds of the Salsa20 permutation on x, in place. */
function salsaRounds(x: Uint32Array): void {
  for (let i = 0; i < 20; i += 2) {
    // column round
    x[4]! ^= rotl((x[0]! + x[12]!) | 0, 7); x[8]! ^= rotl((x[4]! + x[0]!) | 0, 9);
    x[12]! ^= rotl((x[8]! + x[4]!) | 0, 13); x[0]! ^= rotl((x[12]! + x[8]!) | 0, 18);
    x[9]! ^= rotl((x[5]! + x[1]!) | 0, 7); x[13]! ^= rotl((x[9]! + x[5]!) | 0, 9);
    x[1]! ^= rotl((x[13]! + x[9]!) | 0, 13); x[5]! ^= rotl((x[1]! + x[13]!) | 0, 18);
    x[14]! ^= rotl((x[10]! + x[6]!) | 0, 7); x[2]! ^= rotl((x[14]! + x[10]!) | 0, 9);
    x[6]! ^= rotl((x[2]! + x[14]!) | 0, 13); x[10]! ^= rotl((x[6]! + x[2]!) | 0, 18);
    x[3]! ^= rotl((x[15]! + x[11]!) | 0, 7); x[7]! ^= rotl((x[3]! + x[15]!) | 0, 9);
    x[11]! ^= rotl((x[7]! + x[3]!) | 0, 13); x[15]! ^= rotl((x[11]! + x[7]!) | 0, 18);
    // row round
    x[1]! ^= rotl((x[0]! + x[3]!) | 0, 7); x[2]! ^= rotl((x[1]! + x[0]!) | 0, 9);
    x[3]! ^= rotl((x[2]! + x[1]!) | 0, 13); x[0]! ^= rotl((x[3]! + x[2]!) | 0, 18);
    x[6]! ^= rotl((x[5]! + x[4]!) | 0, 7); x[7]! ^= rotl((x[6]! + x[5]!) | 0, 9);
    x[4]! ^= rotl((x[7]! + x[6]!) | 0, 13); x[5]! ^= rotl((x[4]! + x[7]!) | 0, 18);
    x[11]! ^= rotl((x[10]! + x[9]!) | 0, 7); x[8]! ^= rotl((x[11]! + x[10]!) | 0, 9);
    x[9]! ^= rotl((x[8]! + x[11]!) | 0, 13); x[10]! ^= rotl((x[9]! + x[8]!) | 0, 18);
    x[12]! ^= rotl((x[15]! + x[14]!) | 0, 7); x[13]! ^= rotl((x[12]! + x[15]!) | 0, 9);
    x[14]! ^= rotl((x[13]! + x[12]!) | 0, 13); x[15]! ^= rotl((x[14]! + x[13]!) | 0, 18);
  }
}

/** The Salsa20 state for a 32-byte key and a 16-byte input (nonce || counter, or HSalsa20 input). */
function initState(key: Uint8Array, input: Uint8Array): Uint32Array {
  const k = (i: number): number => readLE32(key, i * 4);
  const n = (i: number): number => readLE32(input, i * 4);
  return Uint32Array.of(SIGMA[0]!, k(0), k(1), k(2), k(3), SIGMA[1]!, n(0), n(1), n(2), n(3),
    SIGMA[2]!, k(4), k(5), k(6), k(7), SIGMA[3]!);
}

function readLE32(b: Uint8Array, o: number): number {
  return (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
}

export function hsalsa20(key: Uint8Array, input16: Uint8Array): Buffer {
  const x = initState(key, input16);
  salsaRounds(x);
  const out = Buffer.alloc(32);
  [0, 5, 10, 15, 6, 7, 8, 9].forEach((w, i) => out.writeUInt32LE(x[w]!, i * 4));
  return out;
}

/** XSalsa20 keystream XOR: out = data XOR stream[skip ..]. */
function xsalsa20Xor(key: Uint8Array, nonce: Uint8Array, data: Uint8Array, skip: number): { out: Buffer; head: Buffer } {
  const subkey = hsalsa20(key, nonce.subarray(0, 16));
  const input = Buffer.alloc(16);
  Buffer.from(nonce.subarray(16, 24)).copy(input, 0);
  const total = skip + data.length;
  const stream = Buffer.alloc(Math.ceil(total / 64) * 64);
  const block = new Uint32Array(16);
  for (let counter = 0, off = 0; off < total; counter++, off += 64) {
    input.writeUInt32LE(counter >>> 0, 8);
    input.writeUInt32LE(Math.floor(counter / 0x100000000), 12);
    const init = initState(subkey, input);
    block.set(init);
    salsaRounds(block);
    for (let i = 0; i < 16; i++) stream.writeUInt32LE((block[i]! + init[i]!) >>> 0, off + i * 4);
  }
  const out = Buffer.alloc(data.length);
  for (let i = 0; i < data.length; i++) out[i] = data[i]! ^ stream[skip + i]!;
  return { out, head: stream.subarray(0, skip) };
}

const P1305 = (1n << 130n) - 5n;
const CLAMP = 0x0ffffffc0ffffffc0ffffffc0fffffffn;

function leBig(b: Uint8Array): bigint {
  let v = 0n;
  for (let i = b.length - 1; i >= 0; i--) v = (v << 8n) | BigInt(b[i]!);
  return v;
}

export function poly1305(key: Uint8Array, msg: Uint8Array): Buffer {
  const r = leBig(key.subarray(0, 16)) & CLAMP;
  const s = leBig(key.subarray(16, 32));
  let acc = 0n;
  for (let off = 0; off < msg.length; off += 16) {
    const chunk = msg.subarray(off, Math.min(off + 16, msg.length));
    acc = ((acc + leBig(chunk) + (1n << BigInt(8 * chunk.length))) * r) % P1305;
  }
  let tag = (acc + s) & ((1n << 128n) - 1n);
  const out = Buffer.alloc(16);
  for (let i = 0; i < 16; i++) { out[i] = Number(tag & 0xffn); tag >>= 8n; }
  return out;
}

export function secretboxSeal(msg: Uint8Array, nonce: Uint8Array, key: Uint8Array): Buffer {
  checkSizes(nonce, key);
  const { out: c, head } = xsalsa20Xor(key, nonce, msg, 32);
  return Buffer.concat([poly1305(head, c), c]);
}

/** Returns the plaintext, or undefined when the box does not authenticate. */
export function secretboxOpen(box: Uint8Array, nonce: Uint8Array, key: Uint8Array): Buffer | undefined {
  checkSizes(nonce, key);
  if (box.length < SECRETBOX_TAG_BYTES) return undefined;
  const tag = box.subarray(0, 16);
  const c = box.subarray(16);
  const { out: m, head } = xsalsa20Xor(key, nonce, c, 32);
  return timingSafeEqual(poly1305(head, c), tag) ? m : undefined;
}

function checkSizes(nonce: Uint8Array, key: Uint8Array): void {
  if (key.length !== SECRETBOX_KEY_BYTES) throw new RangeError('secretbox key must be 32 bytes');
  if (nonce.length !== SECRETBOX_NONCE_BYTES) throw new RangeError('secretbox nonce must be 24 bytes');
}
