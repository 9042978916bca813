// --experimental-mounter-path and --experimental-check-node-capabilities-before-mount: the
// mounts the node agent makes itself (tmpfs for memory emptyDirs, NFS) run the given binary,
// and with the check on an NFS mount without the host's mount.nfs helper fails at once naming
// it, before anything is run.
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { configureMounter, MountError, mountNfs, mountTmpfs } from '../../src/daemons/nodeagent/volumes/host-mounts.js';

t.test('the mounter path and the helper check', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-mounter-'));
  t.teardown(async () => { configureMounter({ path: '', checkHelpers: false }); await rm(dir, { recursive: true, force: true }); });
  const log = join(dir, 'calls');
  const fake = join(dir, 'fake-mount');
  await writeFile(fake, `#!/bin/sh\necho "$@" >> ${log}\n`);
  await chmod(fake, 0o755);

  configureMounter({ path: fake, checkHelpers: false });
  await mountTmpfs(join(dir, 'mem'), 1024 * 1024);
  t.equal(await readFile(log, 'utf8'), `-t tmpfs -o size=1048576 tmpfs ${join(dir, 'mem')}\n`, 'the given binary mounts, with mount(8)\'s arguments');

  const helpers = join(dir, 'sbin');
  configureMounter({ path: fake, checkHelpers: true, helperDirs: [helpers] });
  await t.rejects(mountNfs('nfs.example', '/export', join(dir, 'nfs'), false, []), new MountError('Required binary mount.nfs is missing'), 'no helper: refused at once');
  t.equal((await readFile(log, 'utf8')).split('\n').filter(Boolean).length, 1, 'and the mount binary was not run');

  await writeFile(join(dir, 'mount.nfs'), '');
  configureMounter({ path: fake, checkHelpers: true, helperDirs: [dir] });
  await mountNfs('nfs.example', '/export', join(dir, 'nfs'), true, ['vers=4']);
  t.match(await readFile(log, 'utf8'), `-t nfs -o vers=4,ro nfs.example:/export ${join(dir, 'nfs')}`, 'with the helper there the mount runs');

  configureMounter({ path: join(dir, 'absent-mount'), checkHelpers: false });
  await t.rejects(mountTmpfs(join(dir, 'mem2')), /Mounting command: .*absent-mount/, 'a missing mounter fails the mount, naming it');
});
