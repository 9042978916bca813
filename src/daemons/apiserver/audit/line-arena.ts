/**
 * Lines kept as bytes until their batch is written (batch mode of the log backend). Each line
 * is encoded when its request makes it, while the string is young and in cache, into 64 KiB
 * chunks; the buffered events then hold a byte count each, not a string. Strings held until a
 * batch fills (up to 400 events) outlived young collections, were copied by each of them and
 * read back cold: encoding them late cost more than building them.
 *
 * Lines never span chunks and batches are taken in the order lines were added, so a batch's
 * bytes end where its last line ends.
 */
const CHUNK_BYTES = 1 << 16;
const MAX_SPARE = 8;

/** Node's Buffer has latin1Write (one byte per character), which its type declarations leave out. */
type Latin1Writable = Buffer & { latin1Write(s: string, offset: number): number };

export class LineArena {
  /** Oldest first; the last one is being filled. */
  private readonly chunks: Buffer[] = [];
  /** Bytes used in each chunk. */
  private readonly filled: number[] = [];
  /** Bytes of the oldest chunk already taken. */
  private head = 0;
  /** Emptied chunks kept for reuse (up to MAX_SPARE: a batch's worth), so no chunk's memory is new. */
  private readonly spare: Buffer[] = [];

  /** Bytes added and not yet taken. */
  get pending(): number {
    let n = -this.head;
    for (const f of this.filled) n += f;
    return n;
  }

  /**
   * Appends one line's UTF-8 bytes; returns how many. `ascii`: the caller knows the line holds
   * only ASCII characters, so its bytes are copied (latin1) instead of UTF-8 encoded, a good
   * deal cheaper; the same bytes.
   */
  add(line: string, ascii = false): number {
    // A UTF-16 unit is at most 3 bytes of UTF-8.
    const most = line.length * 3;
    let last = this.chunks.length - 1;
    if (last < 0 || most > CHUNK_BYTES - this.filled[last]!) {
      if (most > CHUNK_BYTES) {
        // A line larger than a chunk (a big request or response body) gets a chunk of its own.
        const own = Buffer.from(line, 'utf8');
        this.chunks.push(own);
        this.filled.push(own.length);
        return own.length;
      }
      this.chunks.push(this.spare.pop() ?? Buffer.allocUnsafeSlow(CHUNK_BYTES));
      this.filled.push(0);
      last++;
    }
    const chunk = this.chunks[last]! as Latin1Writable;
    const n = ascii ? chunk.latin1Write(line, this.filled[last]!) : chunk.write(line, this.filled[last]!);
    this.filled[last]! += n;
    return n;
  }

  /**
   * Hands the oldest `bytes` bytes to `write`, one piece per chunk (pieces are views of the
   * chunks, valid until `write` returns), then forgets them, also when `write` throws.
   */
  take(bytes: number, write: (piece: Buffer) => void): void {
    const pieces: Buffer[] = [];
    let left = bytes;
    let at = this.head;
    for (let i = 0; left > 0 && i < this.chunks.length; i++) {
      const end = Math.min(this.filled[i]!, at + left);
      if (end > at) pieces.push(this.chunks[i]!.subarray(at, end));
      left -= end - at;
      at = 0;
    }
    try {
      for (const p of pieces) write(p);
    } finally {
      this.drop(bytes);
    }
  }

  private drop(bytes: number): void {
    let left = bytes;
    while (left > 0 && this.chunks.length) {
      const room = this.filled[0]! - this.head;
      if (left < room) { this.head += left; return; }
      left -= room;
      this.head = 0;
      if (this.chunks.length === 1) { this.filled[0] = 0; return; }
      const done = this.chunks.shift()!;
      this.filled.shift();
      if (done.length === CHUNK_BYTES && this.spare.length < MAX_SPARE) this.spare.push(done);
    }
  }
}
