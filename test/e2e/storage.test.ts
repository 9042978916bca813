// Storage that pods use, end to end: `corectl server` (a real process) on a private containerd,
// driven with kubectl 1.33. The default StorageClass local-path provisions the claims of a
// StatefulSet's volumeClaimTemplates on the pod's node; data written by a pod survives its
// deletion and re-creation; deleting the claims (Delete policy) removes the volumes and their
// directories (the helper pod); a claim's expansion is finished by the node; a ConfigMap edit shows in the mounted file of a running pod
// within 90 s (the default --sync-frequency of 1m); an emptyDir past its sizeLimit evicts its
// pod; CSI volumes of a recording driver (test/helpers/csi-driver.ts) are staged and published
// (after a VolumeAttachment for a driver that attaches) and torn down in order; a claim that does not exist is a FailedMount
// event and a ContainerCreating container, not a hang.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubectl } from '../helpers/kubectl.js';
import { freePort, startServer } from '../helpers/corectl-server.js';
import { containerdSkipReason } from '../helpers/containerd.js';
import { startRecordingDriver } from '../helpers/csi-driver.js';

const bin = kubectl(33);
const noContainerd = containerdSkipReason();
const IMAGE = 'localhost/busybox:static';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const STATEFULSET = `
apiVersion: v1
kind: Service
metadata: { name: web }
spec: { clusterIP: None, selector: { app: web }, ports: [{ port: 80 }] }
---
apiVersion: apps/v1
kind: StatefulSet
metadata: { name: web }
spec:
  serviceName: web
  replicas: 2
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      terminationGracePeriodSeconds: 1
      securityContext: { fsGroup: 2000 }
      containers:
      - name: app
        image: ${IMAGE}
        command: ["sh", "-c", "echo started >> /data/boots; exec sleep 3600"]
        volumeMounts:
        - { name: data, mountPath: /data }
        - { name: data, mountPath: /per-pod, subPathExpr: "$(POD_NAME)" }
        env:
        - name: POD_NAME
          valueFrom: { fieldRef: { fieldPath: metadata.name } }
  volumeClaimTemplates:
  - metadata: { name: data }
    spec:
      accessModes: [ReadWriteOnce]
      resources: { requests: { storage: 16Mi } }
`;

const CONFIGMAP_POD = `
apiVersion: v1
kind: ConfigMap
metadata: { name: settings }
data: { mode: "v1" }
---
apiVersion: v1
kind: Pod
metadata: { name: reader }
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: ${IMAGE}
    command: ["sleep", "3600"]
    volumeMounts: [{ name: cfg, mountPath: /etc/cfg }]
  volumes: [{ name: cfg, configMap: { name: settings } }]
`;

t.test('storage on corectl server with containerd', { skip: !bin ? 'kubectl.1.33 not installed' : noContainerd ? `containerd: ${noContainerd}` : false, timeout: 600_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-storage-'));
  const dataDir = join(dir, 'data');
  const cdDir = join(dir, 'containerd');
  const up = spawnSync(process.execPath, ['scripts/containerd-setup.mjs', 'up', cdDir], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, NODE_OPTIONS: '' } });
  if (up.status !== 0) throw new Error(`containerd-setup up failed: ${up.stderr}`);
  const server = startServer([
    `--data-dir=${dataDir}`, '--bind-address=127.0.0.1', `--secure-port=${await freePort()}`, '--node-name=storage-node',
    `--container-runtime-endpoint=${up.stdout.trim()}`, `--nodeagent-arg=--pod-infra-container-image=${IMAGE}`,
    `--nodeagent-arg=--port=${await freePort()}`, '--nodeagent-arg=--healthz-port=0', '--disable-cluster-dns', '--disable-proxy',
    `--local-storage-helper-image=${IMAGE}`,
  ]);
  t.teardown(async () => {
    await server.stop();
    spawnSync(process.execPath, ['scripts/containerd-setup.mjs', 'down', cdDir], { timeout: 120_000, env: { ...process.env, NODE_OPTIONS: '' } });
    await rm(dir, { recursive: true, force: true });
  });
  await server.waitFor(/node storage-node Ready/, 90_000);
  const env = { ...process.env, KUBECONFIG: join(dataDir, 'admin.coreconfig'), NODE_OPTIONS: '' };
  const k = (...args: string[]): string => {
    const r = spawnSync(bin!, args, { env, encoding: 'utf8', timeout: 90_000 });
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
    return r.stdout;
  };
  const tryK = (...args: string[]): string | undefined => { try { return k(...args); } catch { return undefined; } };
  const json = (...args: string[]): any => JSON.parse(k(...args, '-o', 'json')); // eslint-disable-line @typescript-eslint/no-explicit-any
  const until = async <T>(what: string, f: () => T | undefined | false, ms = 120_000): Promise<T> => {
    const end = Date.now() + ms;
    for (;;) {
      const v = f();
      if (v) return v;
      if (Date.now() > end) throw new Error(`timed out (${ms / 1000}s) waiting for ${what}\n${tryK('get', 'pods,pvc,pv', '-A', '-o', 'wide') ?? ''}\n${tryK('get', 'events', '-A') ?? ''}`);
      await sleep(1000);
    }
  };
  const apply = async (yaml: string): Promise<void> => {
    const f = join(dir, `m${Date.now()}.yaml`);
    await writeFile(f, yaml);
    k('apply', '-f', f);
  };
  const running = (name: string): any => { // eslint-disable-line @typescript-eslint/no-explicit-any
    const p = tryK('get', 'pod', name, '-o', 'json');
    if (!p) return undefined;
    const o = JSON.parse(p);
    return o.status?.phase === 'Running' && !o.metadata.deletionTimestamp && o.status.containerStatuses?.[0]?.ready ? o : undefined;
  };
  const storageDir = join(dataDir, 'storage');

  const classes = json('get', 'storageclass');
  const lp = classes.items.find((c: any) => c.metadata.name === 'local-path'); // eslint-disable-line @typescript-eslint/no-explicit-any
  t.equal(lp?.metadata.annotations?.['storageclass.kubernetes.io/is-default-class'], 'true', 'local-path is the default class');
  t.equal(lp?.volumeBindingMode, 'WaitForFirstConsumer');
  t.equal(lp?.reclaimPolicy, 'Delete');

  await t.test('a StatefulSet with volumeClaimTemplates on the default class runs; data survives its pod', async (t) => {
    await apply(STATEFULSET);
    const first = await until('web-0 and web-1 running', () => { const a = running('web-0'); const b = running('web-1'); return a && b && [a, b]; }, 180_000);
    const claims = json('get', 'pvc');
    t.same(claims.items.map((c: any) => [c.metadata.name, c.status.phase, c.spec.storageClassName]).sort(), // eslint-disable-line @typescript-eslint/no-explicit-any
      [['data-web-0', 'Bound', 'local-path'], ['data-web-1', 'Bound', 'local-path']]);
    const pv0 = json('get', 'pv', claims.items.find((c: any) => c.metadata.name === 'data-web-0').spec.volumeName); // eslint-disable-line @typescript-eslint/no-explicit-any
    t.same(pv0.spec.nodeAffinity.required.nodeSelectorTerms[0].matchFields[0].values, ['storage-node']);
    const hostDir = pv0.spec.hostPath.path as string;
    t.ok(hostDir.startsWith(storageDir + '/'), `the volume is a directory under the data dir (${hostDir})`);

    k('exec', 'web-0', '--', 'sh', '-c', 'echo kept > /data/marker; echo mine > /per-pod/own');
    t.equal(await readFile(join(hostDir, 'marker'), 'utf8'), 'kept\n', 'written into the host directory');
    t.equal(await readFile(join(hostDir, 'web-0', 'own'), 'utf8'), 'mine\n', 'subPathExpr: a directory per pod');
    t.equal(k('exec', 'web-0', '--', 'stat', '-c', '%g', '/data').trim(), '2000', 'the pod\'s fsGroup is given to its local-path volume');
    const oldUid = first[0].metadata.uid;
    k('delete', 'pod', 'web-0', '--wait=false');
    const again = await until('web-0 re-created and running', () => { const p = running('web-0'); return p && p.metadata.uid !== oldUid && p; }, 180_000);
    t.not(again.metadata.uid, oldUid);
    t.equal(k('exec', 'web-0', '--', 'cat', '/data/marker'), 'kept\n', 'the data survived the pod');
    t.equal(k('exec', 'web-0', '--', 'cat', '/data/boots'), 'started\nstarted\n', 'both incarnations wrote to the same volume');

    // Expansion: the expander grows the local-path volume, the node agent finishes it on a sync.
    k('patch', 'pvc', 'data-web-1', '--type=merge', '-p', '{"spec":{"resources":{"requests":{"storage":"32Mi"}}}}');
    const grown = await until('data-web-1 expanded', () => {
      const c = json('get', 'pvc', 'data-web-1');
      return c.status.capacity?.storage === '32Mi' && !(c.status.conditions ?? []).some((x: any) => x.type === 'FileSystemResizePending') && c; // eslint-disable-line @typescript-eslint/no-explicit-any
    }, 120_000);
    t.equal(json('get', 'pv', grown.spec.volumeName).spec.capacity.storage, '32Mi', 'the volume grew');

    k('delete', 'statefulset', 'web', '--wait=false');
    await until('web pods gone', () => { const l = json('get', 'pods', '-l', 'app=web'); return l.items.length === 0; }, 120_000);
    const pvNames = claims.items.map((c: any) => c.spec.volumeName as string); // eslint-disable-line @typescript-eslint/no-explicit-any
    k('delete', 'pvc', 'data-web-0', 'data-web-1', '--wait=false');
    await until('the volumes deleted (Delete reclaim)', () => { const l = json('get', 'pv'); return !l.items.some((v: any) => pvNames.includes(v.metadata.name)); }, 180_000); // eslint-disable-line @typescript-eslint/no-explicit-any
    t.notOk(existsSync(hostDir), 'the data directory is removed on the node');
    t.same(readdirSync(storageDir).filter((n) => n.startsWith('pvc-')), [], 'no volume directory is left');
    await until('helper pods removed', () => json('get', 'pods', '-n', 'kube-system', '-l', 'corectl.io/local-path-helper').items.length === 0, 60_000);
  });

  await t.test('a ConfigMap edit shows in the mounted file of a running pod within 90 s', async (t) => {
    await apply(CONFIGMAP_POD);
    await until('reader running', () => running('reader'), 120_000);
    t.equal(k('exec', 'reader', '--', 'cat', '/etc/cfg/mode'), 'v1');
    const edited = Date.now();
    k('patch', 'configmap', 'settings', '--type=merge', '-p', '{"data":{"mode":"v2","added":"yes"}}');
    await until('the new value in the file', () => tryK('exec', 'reader', '--', 'cat', '/etc/cfg/mode') === 'v2', 90_000);
    t.comment(`the edit showed after ${Math.round((Date.now() - edited) / 1000)} s`);
    t.equal(k('exec', 'reader', '--', 'cat', '/etc/cfg/added'), 'yes', 'a new key appears too');
    t.match(k('exec', 'reader', '--', 'ls', '-a', '/etc/cfg'), /\.\.data/, 'behind the ..data symlink');
  });

  await t.test('CSI: a recording driver on the node is staged, published, unpublished and unstaged; attaching goes through a VolumeAttachment', async (t) => {
    const plugins = join(dataDir, 'nodeagent', 'plugins');
    await mkdir(join(plugins, 'fixture.csi.corectl.io'), { recursive: true });
    await mkdir(join(plugins, 'attach.csi.corectl.io'), { recursive: true });
    const plain = await startRecordingDriver(join(plugins, 'fixture.csi.corectl.io', 'csi.sock'));
    const attaching = await startRecordingDriver(join(plugins, 'attach.csi.corectl.io', 'csi.sock'), { name: 'attach.csi.corectl.io' });
    t.teardown(() => plain.stop());
    t.teardown(() => attaching.stop());
    const volumeAndPod = (name: string, driver: string): string => `
apiVersion: v1
kind: PersistentVolume
metadata: { name: ${name}-pv }
spec: { capacity: { storage: 1Gi }, accessModes: [ReadWriteOnce], persistentVolumeReclaimPolicy: Retain, storageClassName: "", csi: { driver: ${driver}, volumeHandle: ${name}-handle } }
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: { name: ${name} }
spec: { accessModes: [ReadWriteOnce], resources: { requests: { storage: 1Gi } }, storageClassName: "", volumeName: ${name}-pv }
---
apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 1
  containers: [{ name: app, image: ${IMAGE}, command: ["sleep", "3600"], volumeMounts: [{ name: d, mountPath: /data }] }]
  volumes: [{ name: d, persistentVolumeClaim: { claimName: ${name} } }]
`;
    await apply(`
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: { name: fixture.csi.corectl.io }
spec: { attachRequired: false }
---
${volumeAndPod('csi-plain', 'fixture.csi.corectl.io')}
---
${volumeAndPod('csi-attach', 'attach.csi.corectl.io')}`);
    await until('csi-plain running', () => running('csi-plain'), 120_000);
    t.equal(k('exec', 'csi-plain', '--', 'cat', '/data/published'), 'csi-plain-handle', 'the container sees what the driver published');

    // No CSIDriver object: the driver attaches, through the attachdetach controller's VolumeAttachment.
    const va = await until('a VolumeAttachment', () => json('get', 'volumeattachments').items.find((a: any) => a.spec.source.persistentVolumeName === 'csi-attach-pv'), 60_000); // eslint-disable-line @typescript-eslint/no-explicit-any
    t.same(va.spec, { attacher: 'attach.csi.corectl.io', nodeName: 'storage-node', source: { persistentVolumeName: 'csi-attach-pv' } });
    t.equal(json('get', 'pod', 'csi-attach').status.phase, 'Pending', 'the pod waits for the attachment');
    t.notOk(attaching.calls.some(([m]) => m === 'NodeStageVolume'), 'not staged before it is attached');
    // The driver's external attacher's part.
    k('patch', 'volumeattachment', va.metadata.name, '--subresource=status', '--type=merge', '-p', '{"status":{"attached":true,"attachmentMetadata":{"devicePath":"/dev/fake"}}}');
    await until('csi-attach running', () => running('csi-attach'), 120_000);
    t.same(attaching.calls.find(([m]) => m === 'NodeStageVolume')?.[1].publishContext, { devicePath: '/dev/fake' });
    const node = await until('volumesInUse and volumesAttached', () => {
      const n = json('get', 'node', 'storage-node');
      return n.status.volumesAttached?.length && n.status.volumesInUse?.includes('kubernetes.io/csi/attach.csi.corectl.io^csi-attach-handle') && n;
    }, 60_000);
    t.same(node.status.volumesAttached, [{ name: 'kubernetes.io/csi/attach.csi.corectl.io^csi-attach-handle', devicePath: '' }]);

    k('delete', 'pod', 'csi-plain', 'csi-attach', '--wait=false');
    await until('the pods gone', () => !tryK('get', 'pod', 'csi-plain') && !tryK('get', 'pod', 'csi-attach'), 120_000);
    t.same(plain.calls.map(([m]) => m), ['NodeGetInfo', 'NodeGetCapabilities', 'NodeStageVolume', 'NodePublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume'], 'the recorded order');
    await until('detached once the node no longer uses it', () => !json('get', 'volumeattachments').items.some((a: any) => a.metadata.name === va.metadata.name), 120_000); // eslint-disable-line @typescript-eslint/no-explicit-any
  });

  await t.test('an emptyDir written past its sizeLimit gets the pod evicted', async (t) => {
    await apply(`
apiVersion: v1
kind: Pod
metadata: { name: filler }
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers: [{ name: app, image: ${IMAGE}, command: ["sh", "-c", "dd if=/dev/zero of=/scratch/f bs=1024 count=2048; exec sleep 3600"], volumeMounts: [{ name: scratch, mountPath: /scratch }] }]
  volumes: [{ name: scratch, emptyDir: { sizeLimit: 1Mi } }]
`);
    const p = await until('filler evicted', () => { const o = json('get', 'pod', 'filler'); return o.status.phase === 'Failed' && o; }, 120_000);
    t.equal(p.status.reason, 'Evicted');
    t.match(p.status.message, /Usage of EmptyDir volume "scratch" exceeds the limit "1Mi"/);
  });

  await t.test('a claim that cannot be mounted: FailedMount and ContainerCreating, then it runs once the claim is there', async (t) => {
    await apply(`
apiVersion: v1
kind: Pod
metadata: { name: no-claim }
spec:
  nodeName: storage-node
  terminationGracePeriodSeconds: 1
  containers: [{ name: app, image: ${IMAGE}, command: ["sleep", "3600"], volumeMounts: [{ name: d, mountPath: /d }] }]
  volumes: [{ name: d, persistentVolumeClaim: { claimName: later } }]
`);
    const ev = await until('a FailedMount event', () => json('get', 'events', '--field-selector', 'involvedObject.name=no-claim,reason=FailedMount').items[0], 60_000);
    t.match(ev.message, /persistentvolumeclaim "later" not found/);
    const p = json('get', 'pod', 'no-claim');
    t.equal(p.status.phase, 'Pending');
    t.equal(p.status.containerStatuses?.[0]?.state?.waiting?.reason, 'ContainerCreating');
    await apply(`
apiVersion: v1
kind: PersistentVolumeClaim
metadata: { name: later }
spec: { accessModes: [ReadWriteOnce], resources: { requests: { storage: 1Mi } }, storageClassName: "" , volumeName: later-pv }
---
apiVersion: v1
kind: PersistentVolume
metadata: { name: later-pv }
spec: { capacity: { storage: 1Mi }, accessModes: [ReadWriteOnce], persistentVolumeReclaimPolicy: Retain, storageClassName: "", hostPath: { path: ${join(dir, 'later')}, type: DirectoryOrCreate } }
`);
    await until('no-claim running', () => running('no-claim'), 120_000);
    k('exec', 'no-claim', '--', 'sh', '-c', 'echo ok > /d/f');
    t.equal(await readFile(join(dir, 'later', 'f'), 'utf8'), 'ok\n');
  });

  const loopSkip = process.getuid?.() !== 0 ? 'needs root for a loop device' : !existsSync('/dev/loop-control') ? 'no loop devices on this machine' : false;
  await t.test('volumeMode Block: a local volume on a loop device is a device in the container (volumeDevices)', { skip: loopSkip }, async (t) => {
    const img = join(dir, 'block.img');
    await writeFile(img, Buffer.concat([Buffer.from('corectl-block-marker\n'), Buffer.alloc(4 * 1024 * 1024 - 21)]));
    const lo = spawnSync('losetup', ['-f', '--show', img], { encoding: 'utf8' });
    if (lo.status !== 0) throw new Error(`losetup failed: ${lo.stderr.trim()}`);
    const dev = lo.stdout.trim();
    t.teardown(() => { spawnSync('losetup', ['-d', dev]); });
    await apply(`
apiVersion: v1
kind: PersistentVolume
metadata: { name: block-pv }
spec:
  capacity: { storage: 4Mi }
  accessModes: [ReadWriteOnce]
  volumeMode: Block
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  local: { path: ${dev} }
  nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: kubernetes.io/hostname, operator: In, values: [storage-node] }] }] } }
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: { name: block }
spec: { accessModes: [ReadWriteOnce], volumeMode: Block, resources: { requests: { storage: 4Mi } }, storageClassName: "", volumeName: block-pv }
---
apiVersion: v1
kind: Pod
metadata: { name: raw }
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - { name: app, image: ${IMAGE}, command: ["sleep", "3600"], volumeDevices: [{ name: disk, devicePath: /dev/xvda }] }
  volumes: [{ name: disk, persistentVolumeClaim: { claimName: block } }]
`);
    await until('raw running', () => running('raw'), 120_000);
    t.equal(k('exec', 'raw', '--', 'sh', '-c', 'test -b /dev/xvda && echo block').trim(), 'block', 'a block device at the devicePath');
    t.equal(k('exec', 'raw', '--', 'head', '-c', '21', '/dev/xvda').trim(), 'corectl-block-marker', 'the volume\'s bytes are read through it');
    k('exec', 'raw', '--', 'sh', '-c', 'printf written | dd of=/dev/xvda bs=512 seek=8 conv=notrunc 2>/dev/null');
    spawnSync('sync');
    const back = spawnSync('dd', [`if=${dev}`, 'bs=512', 'skip=8', 'count=1', 'status=none']).stdout as Buffer;
    t.equal(back.subarray(0, 7).toString(), 'written', 'and written through to the host\'s device');
  });
});
