/**
 * The event correlator on a manual clock: repeats patch one Event with a growing count,
 * the 10th different message of one reason within 10 minutes starts the combined Event, the
 * aggregation window ends after 10 quiet minutes, and the spam filter lets 25 events about an
 * object through, then one per 5 minutes, per source and object.
 */
import t from 'tap';
import { ManualClock } from '../../src/client/clock.js';
import { COMBINED_PREFIX, EventCorrelator, type CorrelatedEvent } from '../../src/client/event-correlator.js';

let n = 0;
const make = (clock: ManualClock): EventCorrelator => new EventCorrelator({ clock, newName: (e) => `${e.involvedObject.name}.${++n}` });
const ev = (message: string, over: Partial<CorrelatedEvent> = {}): CorrelatedEvent => ({
  type: 'Warning', reason: 'FailedMount', message,
  involvedObject: { kind: 'Pod', namespace: 'ns', name: 'p', uid: 'u1', apiVersion: 'v1' },
  source: { component: 'kubelet', host: 'node-a' }, ...over,
});

t.test('an identical event patches the first one, count growing', async (t) => {
  const clock = new ManualClock(1_000_000);
  const c = make(clock);
  const first = c.correlate(ev('volume "cfg" not found'));
  t.equal(first.action, 'create');
  for (let i = 2; i <= 5; i++) {
    await clock.advance(2000);
    const r = c.correlate(ev('volume "cfg" not found'));
    t.same(r, { action: 'patch', name: first.action === 'create' ? first.name : '', message: 'volume "cfg" not found', count: i, firstTimestamp: 1_000_000 });
  }
  t.equal(c.correlate(ev('volume "cfg" not found', { involvedObject: { kind: 'Pod', namespace: 'ns', name: 'q', uid: 'u2', apiVersion: 'v1' } })).action, 'create', 'another object: its own Event');
  t.equal(c.correlate(ev('volume "cfg" not found', { reason: 'Other' })).action, 'create', 'another reason: its own Event');
});

t.test('more than 10 messages of one reason within 10 minutes are combined', async (t) => {
  const clock = new ManualClock(0);
  const c = make(clock);
  const results = [];
  for (let i = 0; i < 12; i++) { results.push(c.correlate(ev(`message ${i}`))); await clock.advance(1000); }
  t.same(results.slice(0, 9).map((r) => r.action), Array(9).fill('create'), '9 distinct events');
  const combined = results[9];
  t.equal(combined?.action, 'create');
  t.equal(combined && 'message' in combined ? combined.message : '', `${COMBINED_PREFIX}message 9`);
  const next = results[10];
  t.equal(next?.action, 'patch', 'later ones patch the combined Event');
  t.equal(next && 'message' in next ? next.message : '', `${COMBINED_PREFIX}message 10`);
  t.equal(next && next.action === 'patch' ? next.count : 0, 2);
  await clock.advance(10 * 60_000 + 1);
  const fresh = c.correlate(ev('message 99'));
  t.equal(fresh.action === 'create' ? fresh.message : '', 'message 99', 'after 10 quiet minutes messages stand alone again');
});

t.test('spam filter: 25 per source and object, then one per 5 minutes', async (t) => {
  const clock = new ManualClock(0);
  const c = make(clock);
  const actions: string[] = [];
  // Distinct reasons so that aggregation does not merge them.
  for (let i = 0; i < 30; i++) actions.push(c.correlate(ev('m', { reason: `R${i}` })).action);
  t.equal(actions.filter((a) => a !== 'skip').length, 25);
  t.same(actions.slice(25), ['skip', 'skip', 'skip', 'skip', 'skip']);
  t.not(c.correlate(ev('m', { reason: 'x', source: { component: 'kubelet', host: 'node-b' } })).action, 'skip', 'another source has its own bucket');
  t.not(c.correlate(ev('m', { reason: 'x', involvedObject: { kind: 'Pod', namespace: 'ns', name: 'other', uid: 'u9' } })).action, 'skip', 'another object too');
  await clock.advance(5 * 60_000);
  t.not(c.correlate(ev('m', { reason: 'R40' })).action, 'skip', 'a token after 5 minutes');
  t.equal(c.correlate(ev('m', { reason: 'R41' })).action, 'skip', 'and only one');
  // A skipped repeat still counts: the next patch carries the true count.
  await clock.advance(5 * 60_000);
  const r = c.correlate(ev('m', { reason: 'R0' }));
  t.equal(r.action === 'patch' ? r.count : 0, 2);
});
