// Pod volumes on the node (src/daemons/nodeagent/volumes): the atomic writer's ..data swap,
// live refresh of config map volumes, claims resolved to hostPath and local volumes (read-only,
// not-bound errors), subPath and subPathExpr (escapes refused), fsGroup, and memory-backed
// emptyDir (a tmpfs, unmounted at teardown; root only).
import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import type { Pod } from '../../src/daemons/nodeagent/pod-types.js';
import { writeVolumeFiles } from '../../src/daemons/nodeagent/volumes/atomic-files.js';
import type { ClaimReader } from '../../src/daemons/nodeagent/volumes/claims.js';
import { containerDevices, containerMounts, VolumePaths } from '../../src/daemons/nodeagent/volumes/container-mounts.js';
import { emptyDirOverLimit } from '../../src/daemons/nodeagent/volumes/empty-dir-usage.js';
import { isMountPoint } from '../../src/daemons/nodeagent/volumes/host-mounts.js';
import { OrphanPodDirs } from '../../src/daemons/nodeagent/volumes/orphans.js';
import type { SourceObject } from '../../src/daemons/nodeagent/volumes/source-objects.js';
import { refreshVolumes, setUpVolumes, tearDownPodDir, type VolumeContext } from '../../src/daemons/nodeagent/volumes/volumes.js';

const root = await mkdtemp(join(tmpdir(), 'corectl-volumes-'));
t.teardown(() => rm(root, { recursive: true, force: true }));
const isRoot = process.getuid?.() === 0;

const configMaps = new Map<string, Record<string, string>>();
const claims = new Map<string, KubeObject>();
const pvs = new Map<string, KubeObject>();
const claimReader: ClaimReader = { claim: async (ns, n) => claims.get(`${ns}/${n}`), volume: async (n) => pvs.get(n) };

function ctx(rootDir: string): VolumeContext {
  return {
    rootDir, podIp: '10.0.0.1', hostIp: '10.0.0.2', log: pino({ level: 'silent' }), claims: claimReader,
    reader: { configMap: async (ns, n) => configMaps.get(`${ns}/${n}`), secret: async () => undefined },
    projected: { setUp: async () => undefined },
  };
}

function pod(uid: string, volumes: Pod['spec'] extends infer S ? S extends { volumes?: infer V } ? V : never : never, extra: Partial<NonNullable<Pod['spec']>> = {}): Pod {
  return { metadata: { name: `p-${uid}`, namespace: 'default', uid }, spec: { containers: [{ name: 'c' }], volumes, ...extra } };
}

t.test('atomic writer: one version at a time behind ..data; equal payloads write nothing; stale keys go', async (t) => {
  const dir = join(root, 'atomic');
  t.equal(await writeVolumeFiles(dir, [{ path: 'a', data: Buffer.from('1') }, { path: 'sub/b', data: Buffer.from('2'), mode: 0o600 }], 0o644), true);
  const first = await readlink(join(dir, '..data'));
  t.match(first, /^\.\.\d{4}_\d\d_\d\d_/);
  t.equal(await readlink(join(dir, 'a')), '..data/a');
  t.equal(await readFile(join(dir, 'sub', 'b'), 'utf8'), '2');
  t.equal((await stat(join(dir, 'sub', 'b'))).mode & 0o777, 0o600);
  t.equal(await writeVolumeFiles(dir, [{ path: 'a', data: Buffer.from('1') }, { path: 'sub/b', data: Buffer.from('2'), mode: 0o600 }], 0o644), false, 'unchanged');
  t.equal(await readlink(join(dir, '..data')), first);
  t.equal(await writeVolumeFiles(dir, [{ path: 'a', data: Buffer.from('new') }], 0o644), true);
  t.equal(await readFile(join(dir, 'a'), 'utf8'), 'new');
  const names = (await readdir(dir)).sort();
  t.same(names.filter((n) => !n.startsWith('..')), ['a'], 'the removed key is gone');
  t.equal(names.filter((n) => n.startsWith('..') && n !== '..data').length, 1, 'the old version is removed');
  await t.rejects(writeVolumeFiles(dir, [{ path: '../escape', data: Buffer.from('x') }], 0o644), /stay inside the volume/);
});

t.test('a config map volume follows edits of the config map (refreshVolumes)', async (t) => {
  configMaps.set('default/cm', { 'app.conf': 'v1' });
  const p = pod('cm1', [{ name: 'conf', configMap: { name: 'cm' } }]);
  const paths = await setUpVolumes(p, ctx(root));
  const dir = paths.get('conf')!;
  t.equal(await readFile(join(dir, 'app.conf'), 'utf8'), 'v1');
  t.ok((paths as VolumePaths).readOnly.has('conf'), 'config map volumes are read-only');
  t.same(await refreshVolumes(p, paths, ctx(root)), [], 'nothing changed');
  configMaps.set('default/cm', { 'app.conf': 'v2', extra: 'x' });
  t.same(await refreshVolumes(p, paths, ctx(root)), ['conf']);
  t.equal(await readFile(join(dir, 'app.conf'), 'utf8'), 'v2');
  t.equal(await readFile(join(dir, 'extra'), 'utf8'), 'x');
  await tearDownPodDir(root, 'cm1');
});

t.test('claims: hostPath and local volumes, read-only, and why an unusable claim does not mount', async (t) => {
  const hp = join(root, 'hostpath-pv', 'dir');
  const local = join(root, 'local-pv');
  await mkdir(local, { recursive: true });
  const bind = (name: string, pv: string, uid: string, spec: Record<string, unknown>): void => {
    claims.set(`default/${name}`, { metadata: { name, namespace: 'default', uid }, spec: { volumeName: pv }, status: { phase: 'Bound' } });
    pvs.set(pv, { metadata: { name: pv }, spec: { ...spec, claimRef: { namespace: 'default', name, uid } } });
  };
  bind('hp', 'pv-hp', 'u-hp', { hostPath: { path: hp, type: 'DirectoryOrCreate' } });
  bind('loc', 'pv-loc', 'u-loc', { local: { path: local } });
  const p = pod('pvc1', [{ name: 'a', persistentVolumeClaim: { claimName: 'hp' } }, { name: 'b', persistentVolumeClaim: { claimName: 'loc', readOnly: true } }]);
  const paths = await setUpVolumes(p, ctx(root));
  t.equal(paths.get('a'), hp, 'hostPath volume: the host path, created (DirectoryOrCreate)');
  t.ok((await stat(hp)).isDirectory());
  t.equal(paths.get('b'), local);
  t.ok(paths.readOnly.has('b') && !paths.readOnly.has('a'), 'readOnly of the claim source');
  const mounts = await containerMounts({ name: 'c', volumeMounts: [{ name: 'a', mountPath: '/data' }, { name: 'b', mountPath: '/ro' }] }, paths, new Map());
  t.same(mounts.map((m) => [m.containerPath, m.hostPath, m.readonly]), [['/data', hp, false], ['/ro', local, true]]);
  await tearDownPodDir(root, 'pvc1');
  t.ok((await stat(hp)).isDirectory(), 'teardown leaves the volume data alone');

  claims.set('default/pending', { metadata: { name: 'pending', namespace: 'default', uid: 'u-p' }, spec: {}, status: { phase: 'Pending' } });
  await t.rejects(setUpVolumes(pod('pvc2', [{ name: 'x', persistentVolumeClaim: { claimName: 'pending' } }]), ctx(root)), /PVC is not bound/);
  await t.rejects(setUpVolumes(pod('pvc3', [{ name: 'x', persistentVolumeClaim: { claimName: 'nope' } }]), ctx(root)), /persistentvolumeclaim "nope" not found/);
  bind('gone', 'pv-gone', 'u-g', { local: { path: join(root, 'missing') } });
  await t.rejects(setUpVolumes(pod('pvc4', [{ name: 'x', persistentVolumeClaim: { claimName: 'gone' } }]), ctx(root)), /does not exist/);
  bind('other', 'pv-other', 'u-o', { hostPath: { path: hp } });
  pvs.set('pv-other', { metadata: { name: 'pv-other' }, spec: { hostPath: { path: hp }, claimRef: { namespace: 'default', name: 'other', uid: 'someone-else' } } });
  await t.rejects(setUpVolumes(pod('pvc5', [{ name: 'x', persistentVolumeClaim: { claimName: 'other' } }]), ctx(root)), /bound to another claim/);
});

t.test('subPath and subPathExpr: created inside the volume; escapes refused', async (t) => {
  const vol = join(root, 'subvol');
  await mkdir(vol, { recursive: true });
  await symlink('/etc', join(vol, 'evil'));
  const paths = new VolumePaths([['v', vol]]);
  const env = new Map([['POD_NAME', 'web-0']]);
  const [a, b] = await containerMounts({ name: 'c', volumeMounts: [
    { name: 'v', mountPath: '/a', subPath: 'data/x' },
    { name: 'v', mountPath: '/b', subPathExpr: 'logs/$(POD_NAME)', mountPropagation: 'HostToContainer' },
  ] }, paths, env);
  t.equal(a?.hostPath, join(vol, 'data', 'x'));
  t.ok((await stat(join(vol, 'data', 'x'))).isDirectory(), 'a missing subPath directory is created');
  t.equal(b?.hostPath, join(vol, 'logs', 'web-0'));
  t.equal(b?.propagation, 'host-to-container', 'mountPropagation passed to the runtime');
  await t.rejects(containerMounts({ name: 'c', volumeMounts: [{ name: 'v', mountPath: '/x', subPath: '../up' }] }, paths, env), /without '\.\.'/);
  await t.rejects(containerMounts({ name: 'c', volumeMounts: [{ name: 'v', mountPath: '/x', subPath: '/abs' }] }, paths, env), /relative path/);
  await t.rejects(containerMounts({ name: 'c', volumeMounts: [{ name: 'v', mountPath: '/x', subPath: 'evil' }] }, paths, env), /not within the volume/);
  await t.rejects(containerMounts({ name: 'c', volumeMounts: [{ name: 'v', mountPath: '/x', subPath: 'evil/ssl' }] }, paths, env), /not within the volume/);
});

t.test('fsGroup on emptyDir and local volumes', { skip: isRoot ? false : 'needs root (chown)' }, async (t) => {
  const p = pod('fsg', [{ name: 'scratch', emptyDir: {} }], { securityContext: { fsGroup: 2345 } });
  const paths = await setUpVolumes(p, ctx(root));
  const st = await stat(paths.get('scratch')!);
  t.equal(st.gid, 2345);
  t.equal(st.mode & 0o2070, 0o2070, 'setgid and group rwx');
  configMaps.set('default/cm2', { k: 'v' });
  const q = pod('fsg2', [{ name: 'conf', configMap: { name: 'cm2' } }], { securityContext: { fsGroup: 2345 } });
  const qp = await setUpVolumes(q, ctx(root));
  t.equal((await stat(join(qp.get('conf')!, 'k'))).gid, 2345, 'config map files get the fsGroup');
  await tearDownPodDir(root, 'fsg');
  await tearDownPodDir(root, 'fsg2');
});

t.test('emptyDir medium Memory is a tmpfs of sizeLimit, unmounted when the pod goes', { skip: isRoot ? false : 'needs root (mount)' }, async (t) => {
  const p = pod('mem', [{ name: 'm', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } }]);
  const paths = await setUpVolumes(p, ctx(root));
  const d = paths.get('m')!;
  t.ok(await isMountPoint(d), 'a mount point');
  const mounts = await readFile('/proc/self/mountinfo', 'utf8');
  t.match(mounts.split('\n').find((l) => l.split(' ')[4] === d) ?? '', /tmpfs.*size=1024k/);
  await t.rejects(writeFile(join(d, 'big'), Buffer.alloc(2 * 1024 * 1024)), /ENOSPC/, 'sizeLimit enforced by the tmpfs');
  await tearDownPodDir(root, 'mem');
  t.notOk(await isMountPoint(d), 'unmounted');
  await t.rejects(lstat(d), /ENOENT/, 'removed');
});

t.test('an immutable config map is read once; binaryData keeps its bytes', async (t) => {
  let reads = 0;
  let value = 'v1';
  const bin = Buffer.from([0, 0xff, 0x80, 0x7f]);
  const c: VolumeContext = {
    ...ctx(root),
    sources: {
      get: async (_kind, _ns, name): Promise<SourceObject> => {
        reads++;
        return name === 'frozen' ? { data: { k: Buffer.from(value), b: bin }, immutable: true } : { data: { k: Buffer.from(value) }, immutable: false };
      },
    },
  };
  const p = pod('imm', [{ name: 'frozen', configMap: { name: 'frozen' } }, { name: 'live', configMap: { name: 'live' } }]);
  const paths = await setUpVolumes(p, c);
  t.ok((await readFile(join(paths.get('frozen')!, 'b'))).equals(bin), 'binary data byte for byte');
  t.equal(reads, 2);
  value = 'v2';
  t.same(await refreshVolumes(p, paths, c), ['live'], 'only the mutable one is refreshed');
  t.equal(reads, 3, 'the immutable config map is not read again');
  t.equal(await readFile(join(paths.get('frozen')!, 'k'), 'utf8'), 'v1');
  t.equal(await readFile(join(paths.get('live')!, 'k'), 'utf8'), 'v2');
  await tearDownPodDir(root, 'imm');
});

t.test('a local-path volume directory is created world-writable and gets the fsGroup', { skip: isRoot ? false : 'needs root (chown)' }, async (t) => {
  const dir = join(root, 'lp-storage', 'pvc-1_default_c');
  claims.set('default/lp', { metadata: { name: 'lp', namespace: 'default', uid: 'u-lp' }, spec: { volumeName: 'pv-lp' }, status: { phase: 'Bound' } });
  const ann = { 'pv.kubernetes.io/provisioned-by': 'corectl.io/local-path', 'corectl.io/local-path-base': join(root, 'lp-storage') };
  pvs.set('pv-lp', { metadata: { name: 'pv-lp', annotations: ann }, spec: { hostPath: { path: dir, type: 'DirectoryOrCreate' }, claimRef: { namespace: 'default', name: 'lp', uid: 'u-lp' } } });
  await setUpVolumes(pod('lp1', [{ name: 'd', persistentVolumeClaim: { claimName: 'lp' } }], { securityContext: { fsGroup: 3456 } }), ctx(root));
  const st = await stat(dir);
  t.equal(st.mode & 0o777, 0o777);
  t.equal(st.gid, 3456);
  await tearDownPodDir(root, 'lp1');
  // A volume merely claiming to be local-path, elsewhere, is a plain hostPath: no chown, no chmod.
  const other = join(root, 'not-ours');
  await mkdir(other);
  pvs.set('pv-lp', { metadata: { name: 'pv-lp', annotations: ann }, spec: { hostPath: { path: other }, claimRef: { namespace: 'default', name: 'lp', uid: 'u-lp' } } });
  await setUpVolumes(pod('lp2', [{ name: 'd', persistentVolumeClaim: { claimName: 'lp' } }], { securityContext: { fsGroup: 3456 } }), ctx(root));
  t.not((await stat(other)).gid, 3456, 'its group is left alone');
  await tearDownPodDir(root, 'lp2');
});

t.test('a disk-backed emptyDir over its sizeLimit is reported for eviction', async (t) => {
  const p = pod('ed', [{ name: 'scratch', emptyDir: { sizeLimit: '64Ki' } }, { name: 'free', emptyDir: {} }]);
  const paths = await setUpVolumes(p, ctx(root));
  await writeFile(join(paths.get('free')!, 'big'), Buffer.alloc(256 * 1024, 1));
  t.equal(await emptyDirOverLimit(p, paths), undefined, 'no limit, no eviction');
  await writeFile(join(paths.get('scratch')!, 'small'), Buffer.alloc(16 * 1024, 1));
  t.equal(await emptyDirOverLimit(p, paths), undefined, 'under the limit');
  await writeFile(join(paths.get('scratch')!, 'big'), Buffer.alloc(128 * 1024, 1));
  t.equal(await emptyDirOverLimit(p, paths), 'Usage of EmptyDir volume "scratch" exceeds the limit "64Ki". ');
  await tearDownPodDir(root, 'ed');
});

t.test('an NFS mount that cannot be made fails the volume at once (mount(8) with a timeout), it does not hang', { skip: isRoot ? false : 'needs root (mount)' }, async (t) => {
  const started = Date.now();
  await t.rejects(setUpVolumes(pod('nfs1', [{ name: 'share', nfs: { server: '127.0.0.1', path: '/exports/none' } }]), ctx(root)), /mount failed: exit status 32\nMounting command: mount\nMounting arguments: -t nfs 127\.0\.0\.1:\/exports\/none /);
  t.ok(Date.now() - started < 65_000);
  await tearDownPodDir(root, 'nfs1');
});

t.test('orphaned pod directories are torn down (mounts too); known pods are left alone', { skip: isRoot ? false : 'needs root (mount)' }, async (t) => {
  const orphanRoot = await mkdtemp(join(tmpdir(), 'corectl-orphans-'));
  t.teardown(() => rm(orphanRoot, { recursive: true, force: true }));
  const gone = await setUpVolumes(pod('gone', [{ name: 'm', emptyDir: { medium: 'Memory' } }]), ctx(orphanRoot));
  await setUpVolumes(pod('kept', [{ name: 'e', emptyDir: {} }]), ctx(orphanRoot));
  t.ok(await isMountPoint(gone.get('m')!));
  const orphans = new OrphanPodDirs({ rootDir: orphanRoot, log: pino({ level: 'silent' }), periodMs: 0 });
  t.same(await orphans.clean((uid) => uid === 'kept'), ['gone']);
  t.notOk(await isMountPoint(gone.get('m')!), 'its tmpfs is unmounted');
  t.same(await readdir(join(orphanRoot, 'pods')), ['kept']);
});

t.test('a subPath into a config map volume mounts the file of the current version', async (t) => {
  configMaps.set('default/one', { 'app.conf': 'first' });
  const p = pod('sub-cm', [{ name: 'conf', configMap: { name: 'one' } }]);
  const paths = await setUpVolumes(p, ctx(root));
  const [m] = await containerMounts({ name: 'c', volumeMounts: [{ name: 'conf', mountPath: '/etc/app.conf', subPath: 'app.conf' }] }, paths, new Map());
  t.match(m?.hostPath, /\/\.\.\d{4}_[^/]+\/app\.conf$/, 'the versioned file itself (a later version does not replace it)');
  t.equal(await readFile(m!.hostPath, 'utf8'), 'first');
  t.equal(m?.readonly, true);
  await tearDownPodDir(root, 'sub-cm');
});

t.test('volumeMode Block: a local volume\'s device node goes to the container as a device, never mounted', { skip: isRoot ? false : 'needs a device node (root)' }, async (t) => {
  const dev = '/dev/loop0';
  const bindBlock = (name: string, pv: string, spec: Record<string, unknown>): void => {
    claims.set(`default/${name}`, { metadata: { name, namespace: 'default', uid: `u-${name}` }, spec: { volumeName: pv, volumeMode: 'Block' }, status: { phase: 'Bound' } });
    pvs.set(pv, { metadata: { name: pv }, spec: { ...spec, volumeMode: 'Block', claimRef: { namespace: 'default', name, uid: `u-${name}` } } });
  };
  bindBlock('blk', 'pv-blk', { local: { path: dev } });
  const paths = await setUpVolumes(pod('blk1', [{ name: 'raw', persistentVolumeClaim: { claimName: 'blk' } }]), ctx(root));
  t.equal(paths.get('raw'), undefined, 'not a file system path');
  t.equal(paths.blockDevices.get('raw'), dev, 'the device node');
  t.same(containerDevices({ name: 'c', volumeDevices: [{ name: 'raw', devicePath: '/dev/xvda' }] }, paths), [{ containerPath: '/dev/xvda', hostPath: dev, permissions: 'mrw' }]);
  t.throws(() => containerDevices({ name: 'c', volumeMounts: [{ name: 'raw', mountPath: '/data' }] }, paths), /block device .*use volumeDevices/, 'a Block volume cannot be mounted');
  t.throws(() => containerDevices({ name: 'c', volumeDevices: [{ name: 'nope', devicePath: '/dev/x' }] }, paths), /names no block volume/);
  await tearDownPodDir(root, 'blk1');

  const file = join(root, 'not-a-device');
  await writeFile(file, 'x');
  bindBlock('file', 'pv-file', { local: { path: file } });
  await t.rejects(setUpVolumes(pod('blk2', [{ name: 'raw', persistentVolumeClaim: { claimName: 'file' } }]), ctx(root)), /is not a block device/);
  bindBlock('hpb', 'pv-hpb', { hostPath: { path: dev } });
  await t.rejects(setUpVolumes(pod('blk3', [{ name: 'raw', persistentVolumeClaim: { claimName: 'hpb' } }]), ctx(root)), /Block is supported for local volumes only/);
});
