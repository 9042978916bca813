// Value types: parsers accept good values, print them canonically and reject bad ones.
import t from 'tap';
import { VALUE_TYPES } from '../../src/flags/value-types.js';
import { formatDuration, parseDuration, parseDurationNs } from '../../src/util/duration.js';
import { canonicalCidr, canonicalIp } from '../../src/util/ip.js';
import { isQuantity, parseQuantity } from '../../src/util/quantity.js';

t.test('bool: Go ParseBool spellings', async (t) => {
  for (const s of ['1', 't', 'T', 'TRUE', 'true', 'True']) t.equal(VALUE_TYPES.bool.parse(s), true, s);
  for (const s of ['0', 'f', 'F', 'FALSE', 'false', 'False']) t.equal(VALUE_TYPES.bool.parse(s), false, s);
  for (const s of ['yes', 'on', '', 'tRUE', '2']) t.throws(() => VALUE_TYPES.bool.parse(s), s);
  t.equal(VALUE_TYPES.bool.impliedText, 'true', 'a bare --x means true');
});

t.test('int, int32, uint', async (t) => {
  t.equal(VALUE_TYPES.int.parse('42'), 42);
  t.equal(VALUE_TYPES.int.parse('-7'), -7);
  t.equal(VALUE_TYPES.int.parse('0x1f'), 31);
  t.equal(VALUE_TYPES.int.parse('0o17'), 15);
  t.equal(VALUE_TYPES.int.parse('017'), 15, 'leading 0 is octal as in Go base 0');
  t.equal(VALUE_TYPES.int.parse('0b101'), 5);
  t.equal(VALUE_TYPES.int.parse('0'), 0);
  for (const s of ['', 'abc', '1.5', '1e3', '08', '12a', '--1']) t.throws(() => VALUE_TYPES.int.parse(s), s);
  t.equal(VALUE_TYPES.int32.parse('2147483647'), 2147483647);
  t.equal(VALUE_TYPES.int32.parse('-2147483648'), -2147483648);
  t.throws(() => VALUE_TYPES.int32.parse('2147483648'));
  t.throws(() => VALUE_TYPES.int32.parse('-2147483649'));
  t.equal(VALUE_TYPES.uint.parse('10255'), 10255);
  t.throws(() => VALUE_TYPES.uint.parse('-1'));
  t.throws(() => VALUE_TYPES.uint.parse('+1'));
  t.throws(() => VALUE_TYPES.int.parse('99999999999999999999'), 'beyond a safe integer');
});

t.test('float and float32', async (t) => {
  t.equal(VALUE_TYPES.float.parse('0.1'), 0.1);
  t.equal(VALUE_TYPES.float.parse('1e3'), 1000);
  t.equal(VALUE_TYPES.float.parse('.5'), 0.5);
  t.equal(VALUE_TYPES.float.parse('-2'), -2);
  t.equal(VALUE_TYPES.float.format(0.55), '0.55');
  t.equal(VALUE_TYPES.float32.parse('20'), 20);
  t.throws(() => VALUE_TYPES.float32.parse('1e39'), 'out of float32 range');
  for (const s of ['', 'abc', '1.2.3', '0x1p3', '1,5']) t.throws(() => VALUE_TYPES.float.parse(s), s);
});

t.test('string keeps text as given', async (t) => {
  t.equal(VALUE_TYPES.string.parse(' a b '), ' a b ');
  t.equal(VALUE_TYPES.string.parse(''), '');
});

t.test('ip: v4 and v6, canonical form', async (t) => {
  t.equal(VALUE_TYPES.ip.parse('0.0.0.0'), '0.0.0.0');
  t.equal(VALUE_TYPES.ip.parse('127.0.0.1'), '127.0.0.1');
  t.equal(VALUE_TYPES.ip.parse('::'), '::');
  t.equal(VALUE_TYPES.ip.parse('::1'), '::1');
  t.equal(VALUE_TYPES.ip.parse('2001:DB8:0:0:0:0:0:1'), '2001:db8::1');
  t.equal(VALUE_TYPES.ip.parse('2001:db8:0:0:1:0:0:1'), '2001:db8::1:0:0:1', 'first longest run compressed');
  t.equal(VALUE_TYPES.ip.parse('fe80:0:0:1:0:0:0:1'), 'fe80:0:0:1::1', 'longest run wins');
  t.equal(VALUE_TYPES.ip.parse('1:0:2:3:4:5:6:7'), '1:0:2:3:4:5:6:7', 'a single zero group is not compressed');
  t.equal(VALUE_TYPES.ip.parse('::ffff:10.1.2.3'), '10.1.2.3', 'v4-mapped prints as v4 (Go)');
  t.equal(VALUE_TYPES.ip.parse('64:ff9b::192.0.2.33'), '64:ff9b::c000:221');
  t.equal(VALUE_TYPES.ip.parse(''), '', 'empty means unset');
  for (const s of ['256.0.0.1', '1.2.3', '1.2.3.4.5', '01.2.3.4', 'abc', '1::2::3', '1:2:3:4:5:6:7:8:9', 'fe80::1%eth0', '12345::1']) {
    t.throws(() => VALUE_TYPES.ip.parse(s), s);
  }
  t.equal(canonicalIp('10.0.0.1'), '10.0.0.1');
});

t.test('ipNet: CIDR with host bits cleared', async (t) => {
  t.equal(VALUE_TYPES.ipNet.parse('10.0.0.0/24'), '10.0.0.0/24');
  t.equal(VALUE_TYPES.ipNet.parse('10.0.0.77/24'), '10.0.0.0/24');
  t.equal(VALUE_TYPES.ipNet.parse('10.1.2.3/12'), '10.0.0.0/12');
  t.equal(VALUE_TYPES.ipNet.parse('fd00:10:96::1/112'), 'fd00:10:96::/112');
  t.equal(VALUE_TYPES.ipNet.parse('0.0.0.0/0'), '0.0.0.0/0');
  for (const s of ['10.0.0.0', '10.0.0.0/33', '10.0.0.0/-1', '10.0.0.0/a', 'x/24', '::/129']) t.throws(() => VALUE_TYPES.ipNet.parse(s), s);
  t.equal(canonicalCidr('192.168.1.1/16'), '192.168.0.0/16');
});

t.test('portRange', async (t) => {
  t.same(VALUE_TYPES.portRange.parse('30000-32767'), { base: 30000, size: 2768 });
  t.same(VALUE_TYPES.portRange.parse('8080'), { base: 8080, size: 1 });
  t.same(VALUE_TYPES.portRange.parse('100+9'), { base: 100, size: 10 });
  t.equal(VALUE_TYPES.portRange.format({ base: 30000, size: 2768 }), '30000-32767');
  for (const s of ['a-b', '10-5', '70000', '1-70000', '1-', '-1']) t.throws(() => VALUE_TYPES.portRange.parse(s), s);
});

t.test('duration: Go syntax in, milliseconds out, Go String() printing', async (t) => {
  const cases: [string, number, string][] = [
    ['300ms', 300, '300ms'], ['1h30m', 5_400_000, '1h30m0s'], ['2h45m', 9_900_000, '2h45m0s'],
    ['1.5h', 5_400_000, '1h30m0s'], ['-1s', -1000, '-1s'], ['0', 0, '0s'], ['0s', 0, '0s'],
    ['60s', 60_000, '1m0s'], ['8760h', 31_536_000_000, '8760h0m0s'], ['8760h0m0s', 31_536_000_000, '8760h0m0s'],
    ['1.5s', 1500, '1.5s'], ['1m0.25s', 60_250, '1m0.25s'], ['10us', 0.01, '10µs'], ['10µs', 0.01, '10µs'],
    ['1500ns', 0.0015, '1.5µs'], ['5ns', 0.000005, '5ns'], ['.5s', 500, '500ms'], ['+2m', 120_000, '2m0s'],
    ['12h0m0s', 43_200_000, '12h0m0s'], ['4h0m0s', 14_400_000, '4h0m0s'],
  ];
  for (const [text, ms, printed] of cases) {
    t.equal(parseDuration(text), ms, `parse ${text}`);
    t.equal(formatDuration(ms), printed, `print ${text}`);
    t.equal(VALUE_TYPES.duration.format(VALUE_TYPES.duration.parse(text)), printed);
  }
  for (const s of ['', '1', '10', 'h', '1x', '.s', '1h-1m', '1 h', '-', 'abc', '9999999999h']) t.throws(() => parseDuration(s), s);
  t.equal(parseDuration('1.s'), 1000, 'Go accepts a bare trailing point');
  t.equal(parseDurationNs('1.0000000001s'), 1_000_000_000n, 'below a nanosecond is truncated');
});

t.test('stringSlice and stringArray', async (t) => {
  t.same(VALUE_TYPES.stringSlice.parse('a,b,c'), ['a', 'b', 'c']);
  t.same(VALUE_TYPES.stringSlice.parse(''), []);
  t.same(VALUE_TYPES.stringSlice.parse('"a,b",c'), ['a,b', 'c'], 'CSV quoting');
  t.throws(() => VALUE_TYPES.stringSlice.parse('"a,b'));
  t.same(VALUE_TYPES.stringSlice.combine(['a'], ['b', 'c']), ['a', 'b', 'c']);
  t.same(VALUE_TYPES.stringArray.parse('a,b'), ['a,b'], 'stringArray does not split');
  t.same(VALUE_TYPES.stringArray.combine(['x'], ['y']), ['x', 'y']);
});

t.test('mapStringString, including the eviction form', async (t) => {
  t.same(VALUE_TYPES.mapStringString.parse('k=v,k2=v2'), { k: 'v', k2: 'v2' });
  t.same(VALUE_TYPES.mapStringString.parse('a=b=c'), { a: 'b=c' }, 'split at the first =');
  t.same(VALUE_TYPES.mapStringString.parse('memory.available<100Mi,nodefs.available<10%'), { 'memory.available': '100Mi', 'nodefs.available': '10%' });
  t.same(VALUE_TYPES.mapStringString.parse('imagefs.available<15%, memory.available<100Mi'), { 'imagefs.available': '15%', 'memory.available': '100Mi' });
  t.same(VALUE_TYPES.mapStringString.parse(''), {});
  t.same(VALUE_TYPES.mapStringString.combine({ a: '1', b: '2' }, { b: '3' }), { a: '1', b: '3' });
  for (const s of ['novalue', '=v', 'a=1,,b=2']) t.throws(() => VALUE_TYPES.mapStringString.parse(s), s);
  t.equal(VALUE_TYPES.mapStringString.format({ b: '2', a: '1' }), 'a=1,b=2');
});

t.test('mapStringBool', async (t) => {
  t.same(VALUE_TYPES.mapStringBool.parse('A=true,B=false,C=1'), { A: true, B: false, C: true });
  for (const s of ['A=yes', 'A', '=true']) t.throws(() => VALUE_TYPES.mapStringBool.parse(s), s);
});

t.test('namedCertKey', async (t) => {
  t.same(VALUE_TYPES.namedCertKey.parse('a.crt,a.key'), [{ certFile: 'a.crt', keyFile: 'a.key', names: [] }]);
  t.same(VALUE_TYPES.namedCertKey.parse('a.crt,a.key:*.foo.com,foo.com'), [{ certFile: 'a.crt', keyFile: 'a.key', names: ['*.foo.com', 'foo.com'] }]);
  t.same(VALUE_TYPES.namedCertKey.combine([{ certFile: 'a', keyFile: 'b', names: [] }], [{ certFile: 'c', keyFile: 'd', names: [] }]).length, 2);
  for (const s of ['a.crt', 'a.crt,a.key,b', 'a.crt,a.key:', ',a.key', 'a.crt,a.key:x,,y']) t.throws(() => VALUE_TYPES.namedCertKey.parse(s), s);
});

t.test('taints', async (t) => {
  t.same(VALUE_TYPES.taints.parse('dedicated=gpu:NoSchedule,example.com/maint:NoExecute,k=v:PreferNoSchedule'), [
    { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' },
    { key: 'example.com/maint', value: '', effect: 'NoExecute' },
    { key: 'k', value: 'v', effect: 'PreferNoSchedule' },
  ]);
  t.equal(VALUE_TYPES.taints.format(VALUE_TYPES.taints.parse('a=b:NoSchedule,c:NoExecute')), 'a=b:NoSchedule,c:NoExecute');
  for (const s of ['a=b', 'a=b:Sometimes', ':NoSchedule', 'bad key:NoSchedule', 'a=b c:NoSchedule', 'a:NoSchedule,a=x:NoSchedule']) {
    t.throws(() => VALUE_TYPES.taints.parse(s), s);
  }
});

t.test('version', async (t) => {
  t.equal(VALUE_TYPES.version.parse('true'), true);
  t.equal(VALUE_TYPES.version.parse('false'), false);
  t.equal(VALUE_TYPES.version.parse('raw'), 'raw');
  t.throws(() => VALUE_TYPES.version.parse('full'));
  t.equal(VALUE_TYPES.version.impliedText, 'true');
});

t.test('quantities', async (t) => {
  t.equal(parseQuantity('100Mi'), 100 * 2 ** 20);
  t.equal(parseQuantity('1G'), 1e9);
  t.equal(parseQuantity('500m'), 0.5);
  t.equal(parseQuantity('1e3'), 1000);
  t.notOk(isQuantity('100MB'));
  t.notOk(isQuantity('abc'));
  t.throws(() => parseQuantity(''));
});
