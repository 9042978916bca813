// The password file and the Authorization: Basic header, as Kubernetes reads them.
import t from 'tap';
import { BasicAuthAuthenticator, basicCredentials } from '../../../src/auth/authenticators/basic-auth.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const basic = (v: string) => ({ headers: { authorization: v } });

t.test('file: columns, quoted groups, duplicates, errors', async (t) => {
  const { authenticator: a, warnings } = BasicAuthAuthenticator.fromText([
    'pw1,alice,uid1,"g1, g2",ignored',
    '',
    'pw2,bob,uid2',
    'pw3,alice,uid3,"later"',
  ].join('\n'), 'users.csv');
  t.match(warnings, [/duplicate username 'alice'.*users\.csv.*line 4/]);
  let r = await a.authenticate(basic(`Basic ${b64('alice:pw3')}`));
  t.same(r, { ok: true, method: 'basic-auth', user: { name: 'alice', uid: 'uid3', groups: ['later'] } }, 'the later line wins');
  r = await a.authenticate(basic(`Basic ${b64('alice:pw1')}`));
  t.same(r, { ok: false, error: 'invalid username/password combination' });
  r = await a.authenticate(basic(`basic ${b64('bob:pw2')}`));
  t.same(r.ok && r.user, { name: 'bob', uid: 'uid2', groups: [] }, 'scheme case-insensitive');
  t.throws(() => BasicAuthAuthenticator.fromText('pw,user\n', 'f.csv'), /password file 'f\.csv' must have at least 3 columns \(password, user name, user uid\), found 2/);
  t.throws(() => BasicAuthAuthenticator.fromText('pw,"user,uid\n', 'f.csv'), /line 1/);
  const groups = BasicAuthAuthenticator.fromText('p,u,i,"a,b"\n').authenticator;
  r = await groups.authenticate(basic(`Basic ${b64('u:p')}`));
  t.same(r.ok && r.user.groups, ['a', 'b']);
});

t.test('header: only well-formed Basic credentials count', async (t) => {
  t.same(basicCredentials({ authorization: `Basic ${b64('a:b:c')}` }), { user: 'a', password: 'b:c' }, 'the password may hold colons');
  t.same(basicCredentials({ authorization: `Basic ${b64(':')}` }), { user: '', password: '' });
  t.equal(basicCredentials({ authorization: `Basic ${b64('nocolon')}` }), undefined);
  t.equal(basicCredentials({ authorization: 'Basic !!!' }), undefined);
  t.equal(basicCredentials({ authorization: `Bearer ${b64('a:b')}` }), undefined);
  t.equal(basicCredentials({}), undefined);
  const { authenticator: a } = BasicAuthAuthenticator.fromText('p,u,i\n');
  t.same(await a.authenticate({ headers: {} }), { ok: false }, 'no header: not this authenticator\'s');
  t.same(await a.authenticate(basic('Basic !!!')), { ok: false }, 'malformed: not basic credentials (as Go\'s BasicAuth)');
});
