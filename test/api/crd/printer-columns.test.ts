import t from 'tap';
import { evaluateJsonPath } from '../../../src/api/crd/jsonpath.js';
import { columnCell, formatCell } from '../../../src/api/crd/printer-columns.js';

const obj = {
  apiVersion: 'stable.example.com/v1',
  kind: 'CronTab',
  metadata: { name: 'x', labels: { app: 'web', 'example.com/tier': 'front' } },
  spec: { replicas: 3, ratio: 0.5, enabled: true, cron: '*/5 * * * *', items: [{ name: 'a' }, { name: 'b', size: 2 }] },
  status: { conditions: [{ type: 'Progressing', status: 'False' }, { type: 'Ready', status: 'True' }] },
};

t.test('JSONPath as printer columns use it', async (t) => {
  const cases: Array<[string, unknown[]]> = [
    ['.spec.replicas', [3]],
    ['{.spec.replicas}', [3]],
    ['.status.conditions[0].type', ['Progressing']],
    ['.status.conditions[-1].type', ['Ready']],
    ['.metadata.labels.app', ['web']],
    [".metadata.labels['example.com/tier']", ['front']],
    ['.metadata.labels.example\\.com/tier', ['front']],
    ['.spec.items[*].name', ['a', 'b']],
    ['.spec.items[0:1].name', ['a']],
    ['.status.conditions[?(@.type=="Ready")].status', ['True']],
    [".status.conditions[?(@.status!='True')].type", ['Progressing']],
    ['.spec.items[?(@.size>1)].name', ['b']],
    ['.spec.items[?(@.size)].name', ['b']],
    ['.spec..name', ['a', 'b']],
    ['.spec.missing', []],
    ['.spec.items[5].name', []],
    ['.spec.replicas.deeper', []],
  ];
  for (const [path, want] of cases) t.same(evaluateJsonPath(obj, path), want, path);
  t.throws(() => evaluateJsonPath(obj, '.spec.items[x]'), /invalid array index/);
  t.throws(() => evaluateJsonPath(obj, '.spec.items[0'), /unclosed array/);
});

t.test('cells by column type', async (t) => {
  const now = new Date('2024-01-02T12:00:00Z');
  const cases: Array<[unknown, string, unknown]> = [
    [3, 'integer', 3], [3.7, 'integer', 3], ['3', 'integer', null], [true, 'integer', null],
    [3, 'number', 3], [0.5, 'number', 0.5], ['0.5', 'number', null],
    [true, 'boolean', true], ['true', 'boolean', null],
    ['x', 'string', 'x'], [3, 'string', '3'], [0.5, 'string', '0.5'], [true, 'string', 'true'],
    [{ b: 1, a: [1, 'x'] }, 'string', '{"a":[1,"x"],"b":1}'], [['a', 'b'], 'string', '["a","b"]'],
    [null, 'string', null], [undefined, 'integer', null],
    ['2024-01-02T00:00:00Z', 'date', '12h'], ['2024-01-02T11:59:30.5Z', 'date', '29s'], ['2023-12-01T12:00:00+00:00', 'date', '32d'],
    ['', 'date', '<unknown>'], ['yesterday', 'date', '<invalid>'], ['2024-01-03T00:00:00Z', 'date', '<invalid>'], [5, 'date', null],
    ['x', 'object', null],
  ];
  for (const [value, type, want] of cases) t.same(formatCell(value, type, '', now), want, `${JSON.stringify(value)} as ${type}`);
});

t.test('whole cells: the first match, or null', async (t) => {
  t.equal(columnCell(obj, { type: 'string', jsonPath: '.spec.items[*].name' }), 'a');
  t.equal(columnCell(obj, { type: 'integer', jsonPath: '.spec.replicas', format: 'int32' }), 3);
  t.equal(columnCell(obj, { type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' }), 'True');
  t.equal(columnCell(obj, { type: 'integer', jsonPath: '.spec.nope' }), null);
  t.equal(columnCell(obj, { type: 'integer', jsonPath: '.spec.items[x]' }), null);
});
