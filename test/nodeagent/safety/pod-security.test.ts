// The node's pod checks as pure functions: privileged, host namespaces by source, sysctls
// (safe, allowed unsafe, forbidden, not namespaced, shared with the host), seccomp profiles,
// and the kernel tunables of --protect-kernel-defaults against a temp /proc/sys.
import t from 'tap';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admitPodSecurity, type PodSecurityConfig } from '../../../src/daemons/nodeagent/safety/pod-security.js';
import { containerSeccomp, podSeccomp } from '../../../src/daemons/nodeagent/safety/seccomp.js';
import { describeMismatches, KERNEL_DEFAULTS, kernelTunableMismatches } from '../../../src/daemons/nodeagent/safety/kernel-tunables.js';
import type { Pod } from '../../../src/daemons/nodeagent/pod-types.js';

const open: PodSecurityConfig = { allowPrivileged: true, hostNetworkSources: ['*'], hostPidSources: ['*'], hostIpcSources: ['*'], allowedUnsafeSysctls: [] };
const withSysctls = (names: string[], extra: object = {}): Pod => ({ metadata: { uid: 'u' }, spec: { containers: [{ name: 'c' }], securityContext: { sysctls: names.map((name) => ({ name, value: '1' })) }, ...extra } });

t.test('privileged and host namespaces', async (t) => {
  const priv: Pod = { metadata: { uid: 'u1' }, spec: { initContainers: [{ name: 'i', securityContext: { privileged: true } }], containers: [{ name: 'c' }] } };
  t.same(admitPodSecurity(priv, open), { admit: true });
  t.same(admitPodSecurity(priv, { ...open, allowPrivileged: false }), { admit: false, reason: 'Forbidden', message: 'pod with UID "u1" specified privileged container, but is disallowed' });
  const hostNet: Pod = { metadata: { uid: 'u2', annotations: { 'kubernetes.io/config.source': 'file' } }, spec: { hostNetwork: true, containers: [{ name: 'c' }] } };
  t.ok(admitPodSecurity(hostNet, { ...open, hostNetworkSources: ['file'] }).admit, 'file source allowed');
  t.match(admitPodSecurity(hostNet, { ...open, hostNetworkSources: ['api'] }), { admit: false, reason: 'Forbidden', message: /host networking, but is disallowed/ });
  const apiPid: Pod = { metadata: { uid: 'u3' }, spec: { hostPID: true, containers: [{ name: 'c' }] } };
  t.match(admitPodSecurity(apiPid, { ...open, hostPidSources: ['file', 'http'] }), { reason: 'Forbidden', message: /host PID/ }, 'an API pod is source api');
  t.ok(admitPodSecurity(apiPid, { ...open, hostPidSources: ['api'] }).admit);
  t.match(admitPodSecurity({ metadata: { uid: 'u' }, spec: { hostIPC: true } }, { ...open, hostIpcSources: [] }), { reason: 'Forbidden', message: /host IPC/ });
});

t.test('sysctls', async (t) => {
  t.ok(admitPodSecurity(withSysctls(['net.ipv4.ip_local_port_range', 'kernel.shm_rmid_forced']), open).admit, 'the safe set');
  t.same(admitPodSecurity(withSysctls(['net.core.somaxconn']), open), { admit: false, reason: 'SysctlForbidden', message: 'forbidden sysctl: "net.core.somaxconn" not allowlisted' });
  t.ok(admitPodSecurity(withSysctls(['net.core.somaxconn']), { ...open, allowedUnsafeSysctls: ['net.core.*'] }).admit, 'allowed by prefix');
  t.ok(admitPodSecurity(withSysctls(['kernel.msgmax']), { ...open, allowedUnsafeSysctls: ['kernel.msgmax'] }).admit, 'allowed by name');
  t.match(admitPodSecurity(withSysctls(['vm.swappiness']), { ...open, allowedUnsafeSysctls: ['vm.*'] }), { reason: 'SysctlForbidden', message: /not namespaced/ });
  t.match(admitPodSecurity(withSysctls(['net.ipv4.tcp_syncookies'], { hostNetwork: true }), open), { reason: 'SysctlForbidden', message: /host net/ });
  t.match(admitPodSecurity(withSysctls(['kernel.shm_rmid_forced'], { hostIPC: true }), open), { reason: 'SysctlForbidden', message: /host ipc/ });
});

t.test('seccomp profiles', async (t) => {
  const pod: Pod = { spec: { securityContext: { seccompProfile: { type: 'RuntimeDefault' } }, containers: [] } };
  t.same(podSeccomp(pod, '/sec'), { profileType: 'RuntimeDefault' });
  t.same(containerSeccomp(pod, { name: 'c', securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'profiles/audit.json' } } } as never, '/sec'),
    { profileType: 'Localhost', localhostRef: '/sec/profiles/audit.json' }, 'the container wins, under --seccomp-profile-root');
  t.same(containerSeccomp(pod, { name: 'c' }, '/sec'), { profileType: 'RuntimeDefault' }, 'else the pod\'s');
  t.equal(podSeccomp({ spec: {} }, '/sec'), undefined);
  t.throws(() => containerSeccomp(pod, { name: 'c', securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: '../../etc/x' } } } as never, '/sec'), /inside --seccomp-profile-root/);
  t.throws(() => containerSeccomp(pod, { name: 'c', securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: '/etc/x' } } } as never, '/sec'), /inside --seccomp-profile-root/);
  t.throws(() => containerSeccomp(pod, { name: 'c', securityContext: { seccompProfile: { type: 'Localhost' } } } as never, '/sec'), /needs a localhostProfile/);
});

t.test('kernel tunables', async (t) => {
  const sys = await mkdtemp(join(tmpdir(), 'corectl-sysctl-'));
  t.teardown(() => rm(sys, { recursive: true, force: true }));
  for (const [name, v] of Object.entries(KERNEL_DEFAULTS)) {
    const parts = name.split('.');
    await mkdir(join(sys, ...parts.slice(0, -1)), { recursive: true });
    await writeFile(join(sys, ...parts), `${v}\n`);
  }
  t.same(await kernelTunableMismatches(sys), [], 'all as expected');
  await writeFile(join(sys, 'kernel', 'panic'), '1\n');
  await writeFile(join(sys, 'vm', 'overcommit_memory'), '0\n');
  const m = await kernelTunableMismatches(sys);
  t.equal(describeMismatches(m), 'invalid kernel flag: vm.overcommit_memory, expected value: 1, actual value: 0; invalid kernel flag: kernel.panic, expected value: 10, actual value: 1');
});
