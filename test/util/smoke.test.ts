import t from 'tap';
import { GIT_VERSION } from '../../src/version.js';
t.test('version is semver', async (t) => {
  t.match(GIT_VERSION, /^v\d+\.\d+\.\d+/);
});
