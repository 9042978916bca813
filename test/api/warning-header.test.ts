// Warning header values as Kubernetes' warning recorder writes them: quoting, UTF-8 bytes,
// dropped texts, deduplication and truncation.
import t from 'tap';
import { warningHeaderValue, warningHeaderValues } from '../../src/api/codec/warning-header.js';

const utf8 = (v: string): string => Buffer.from(v, 'latin1').toString('utf8');

t.test('quoting and encoding', async (t) => {
  t.equal(warningHeaderValue('unknown field "spec.foo"'), '299 - "unknown field \\"spec.foo\\""');
  t.equal(warningHeaderValue('a\\b'), '299 - "a\\\\b"', 'a backslash is escaped');
  const v = warningHeaderValue('unknown field "€日\ud800"')!;
  t.notOk(/[^\x00-\xff]/.test(v), 'only one-byte characters reach setHeader');
  t.equal(utf8(v), '299 - "unknown field \\"€日\ufffd\\""', 'UTF-8 bytes on the wire; a lone surrogate is U+FFFD');
  t.equal(warningHeaderValue('é'), Buffer.from('299 - "é"', 'utf8').toString('latin1'), 'Latin-1 letters go out as UTF-8 too');
  for (const bad of ['a\nb', 'a\rb', 'tab\t', '\u007f', '\u0085', '']) t.equal(warningHeaderValue(bad), undefined, `${JSON.stringify(bad)} is not sent`);
});

t.test('deduplication and truncation', async (t) => {
  t.same(warningHeaderValues(['a', 'b', 'a', '', 'x\ny', 'c']), ['299 - "a"', '299 - "b"', '299 - "c"'], 'in order, once each, bad ones dropped');
  const long = (c: string): string => c.repeat(1000);
  // 4 × 1000 characters fit in 4096; a fifth does not: all are cut to 256 and sent again.
  const five = warningHeaderValues(['a', 'b', 'c', 'd', 'e'].map(long));
  t.equal(five.length, 5);
  t.ok(five.every((v) => v.length === '299 - ""'.length + 256), 'every text cut to 256 characters');
  const four = warningHeaderValues(['a', 'b', 'c', 'd'].map(long));
  t.ok(four.every((v) => v.length === '299 - ""'.length + 1000), 'within the limit nothing is cut');
  const many = warningHeaderValues(Array.from({ length: 40 }, (_, i) => `${i}`.padEnd(300, '.')));
  t.equal(many.length, 16, 'cut to 256 each, texts stop at 4096 characters in all');
  const runes = warningHeaderValues(['€'.repeat(5000)]);
  t.equal(utf8(runes[0]!), `299 - "${'€'.repeat(256)}"`, 'lengths count characters, not bytes');
});

t.test('field paths in warnings are quoted as Go quotes them', async (t) => {
  const { goQuote } = await import('../../src/api/codec/strict.js');
  t.equal(goQuote('spec.foo'), '"spec.foo"');
  t.equal(goQuote('a"b\\c'), '"a\\"b\\\\c"');
  t.equal(goQuote('new\nline\t\u0001\u007f\u0085'), '"new\\nline\\t\\x01\\x7f\\u0085"', 'controls escaped, so the warning is sent');
  t.equal(goQuote('€日\ufffd'), '"€日\ufffd"', 'printable characters as they are');
  t.equal(goQuote('\u200b'), '"\\u200b"', 'a format character escaped');
  t.equal(goQuote('\ud800'), '"\ufffd"', 'a lone surrogate is U+FFFD');
});
