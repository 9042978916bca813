// RequestAbort (a lazily made abort signal) and OpenRequests (the list of requests shutdown aborts).
import t from 'tap';
import { OpenRequests, RequestAbort } from '../../src/daemons/apiserver/request-abort.js';

t.test('an abort before the signal is read is remembered; the first reason wins', async (t) => {
  const a = new RequestAbort();
  a.abort('first');
  a.abort('second');
  t.equal(a.signal.aborted, true);
  t.equal(a.signal.reason, 'first');
  const b = new RequestAbort();
  const s = b.signal;
  t.equal(s.aborted, false);
  b.abort('later');
  t.equal(s.aborted, true);
  t.equal(b.signal, s, 'one signal per request');
});

t.test('OpenRequests adds, removes from any place, and aborts what is left', async (t) => {
  const list = new OpenRequests();
  const rs = Array.from({ length: 5 }, () => new RequestAbort());
  for (const r of rs) list.add(r);
  list.add(rs[0]!);
  t.equal(list.size, 5, 'adding twice keeps one entry');
  list.delete(rs[4]!); // the head (last added)
  list.delete(rs[2]!); // the middle
  list.delete(rs[0]!); // the tail
  list.delete(rs[0]!);
  list.delete(new RequestAbort());
  t.equal(list.size, 2, 'deleting one not on the list does nothing');
  t.ok([rs[0], rs[2], rs[4]].every((r) => r!.listPrev === undefined && r!.listNext === undefined), 'a removed request keeps no link');
  const early = rs[1]!.signal;
  list.abortAll('stopping');
  t.equal(list.size, 0);
  t.equal(early.reason, 'stopping', 'a signal already handed out is aborted');
  t.equal(rs[3]!.signal.reason, 'stopping', 'and one read later starts aborted');
  t.equal(rs[0]!.signal.aborted, false, 'removed requests are left alone');
  t.ok(rs.every((r) => !r.listed && r.listNext === undefined));
  list.add(rs[0]!);
  t.equal(list.size, 1, 'the list is usable after abortAll');
});
