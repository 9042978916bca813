import t from 'tap';
import { DeadlineList } from '../../src/daemons/apiserver/filters/deadline-list.js';
import { waitFor } from '../helpers/wait-for.js';

t.test('entries expire in order, no earlier than their time, unless cancelled', async (t) => {
  const list = new DeadlineList(40);
  const fired: string[] = [];
  const at: Record<string, number> = {};
  const add = (name: string) => { at[name] = performance.now(); return list.add(() => { fired.push(name); t.ok(performance.now() - at[name]! >= 39, `${name} not early`); }); };
  add('a');
  const b = add('b');
  add('c');
  b.cancel();
  b.cancel();
  t.equal(list.size, 2);
  await waitFor('fired.length === 2', () => fired.length === 2);
  t.same(fired, ['a', 'c']);
  t.equal(list.size, 0);
});

t.test('a cancelled head does not stop later entries; an emptied list keeps an idle timer', async (t) => {
  const list = new DeadlineList(30);
  const fired: string[] = [];
  const a = list.add(() => fired.push('a'));
  a.cancel();
  t.equal(list.size, 0);
  t.not(list.armedAt, undefined, 'the timer stays (unref\'d) for reuse');
  await new Promise((r) => setTimeout(r, 10));
  list.add(() => fired.push('b'));
  await waitFor('fired.length === 1', () => fired.length === 1);
  t.same(fired, ['b']);
  list.close();
  t.equal(list.armedAt, undefined);
});

t.test('expire may add and cancel entries', async (t) => {
  const list = new DeadlineList(20);
  const fired: string[] = [];
  let second: { cancel(): void } | undefined;
  list.add(() => { fired.push('first'); second?.cancel(); list.add(() => fired.push('third')); });
  second = list.add(() => fired.push('second'));
  await waitFor('fired.includes("third")', () => fired.includes('third'));
  t.ok(fired[0] === 'first');
  list.close();
});
