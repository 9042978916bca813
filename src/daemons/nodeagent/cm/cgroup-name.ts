/**
 * Cgroup names as Kubernetes' node agent builds them: a name is a list of components
 * (['kubepods', 'burstable', 'pod<uid>']) that each driver turns into a path.
 *   cgroupfs: /kubepods/burstable/pod<uid>
 *   systemd:  /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice
 * (a systemd slice repeats its ancestors' names joined by '-', so a '-' inside a component is
 * escaped to '_'). We write both layouts through the cgroup filesystem ourselves: there is no
 * systemd to ask for units, and containerd's runc is given the full path as cgroup parent.
 */
export type CgroupDriver = 'cgroupfs' | 'systemd';
export type CgroupName = readonly string[];

export type QosClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

/** The components of an absolute cgroupfs path or systemd slice path (for --cgroup-root and the reserved cgroups). */
export function parseCgroupName(path: string, driver: CgroupDriver): CgroupName {
  const parts = path.split('/').filter(Boolean);
  if (driver === 'cgroupfs') return parts;
  // A systemd path: only the last slice matters, its name holds every ancestor.
  const last = parts[parts.length - 1];
  if (!last) return [];
  if (!last.endsWith('.slice')) return parts; // not a slice path: take it as components
  const slice = last.slice(0, -'.slice'.length);
  return slice === '-' ? [] : slice.split('-');
}

function systemdPath(name: CgroupName): string {
  if (name.length === 0) return '/';
  const escaped = name.map((c) => c.replace(/-/g, '_'));
  const slices: string[] = [];
  for (let i = 1; i <= escaped.length; i++) slices.push(`${escaped.slice(0, i).join('-')}.slice`);
  return `/${slices.join('/')}`;
}

/** The cgroup's path below a controller's mount point. */
export function cgroupPath(name: CgroupName, driver: CgroupDriver): string {
  return driver === 'systemd' ? systemdPath(name) : `/${name.join('/')}`;
}

/** Where the pods of a QoS class live: Guaranteed pods directly under kubepods. */
export function qosCgroupName(root: CgroupName, qos: QosClass): CgroupName {
  const pods = [...root, 'kubepods'];
  if (qos === 'Guaranteed') return pods;
  return [...pods, qos.toLowerCase()];
}

export function podCgroupName(root: CgroupName, qos: QosClass, uid: string): CgroupName {
  return [...qosCgroupName(root, qos), `pod${uid}`];
}
