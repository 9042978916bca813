/**
 * The zlib dictionary SPDY/3 header blocks are compressed with (SPDY draft 3, §2.6.10.1): a run
 * of length-prefixed header words followed by a block of common values. Both peers must use
 * these exact 1 423 bytes: zlib checks the dictionary's Adler-32 sum, so a wrong byte means no
 * header block can be read at all (test/util/spdy checks the length and digest).
 */
const WORDS = [
  'options', 'head', 'post', 'put', 'delete', 'trace', 'accept', 'accept-charset', 'accept-encoding',
  'accept-language', 'accept-ranges', 'age', 'allow', 'authorization', 'cache-control', 'connection',
  'content-base', 'content-encoding', 'content-language', 'content-length', 'content-location',
  'content-md5', 'content-range', 'content-type', 'date', 'etag', 'expect', 'expires', 'from', 'host',
  'if-match', 'if-modified-since', 'if-none-match', 'if-range', 'if-unmodified-since', 'last-modified',
  'location', 'max-forwards', 'pragma', 'proxy-authenticate', 'proxy-authorization', 'range', 'referer',
  'retry-after', 'server', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'user-agent', 'vary', 'via',
  'warning', 'www-authenticate', 'method', 'get', 'status', '200 OK', 'version', 'HTTP/1.1', 'url',
  'public', 'set-cookie', 'keep-alive', 'origin',
];

const STATUS_CODES = '100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505';
const STATUS_LINES = [
  '203 Non-Authoritative Information', '204 No Content', '301 Moved Permanently', '400 Bad Request',
  '401 Unauthorized', '403 Forbidden', '404 Not Found', '500 Internal Server Error', '501 Not Implemented',
  '503 Service Unavailable',
].join('');
const DATES = 'Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT';
const VALUES = 'chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,' +
  'text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.';

function build(): Buffer {
  const parts: Buffer[] = [];
  for (const w of WORDS) {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(w.length);
    parts.push(len, Buffer.from(w, 'latin1'));
  }
  parts.push(Buffer.from(STATUS_CODES + STATUS_LINES + DATES + VALUES, 'latin1'));
  return Buffer.concat(parts);
}

export const SPDY3_HEADER_DICTIONARY: Buffer = build();
