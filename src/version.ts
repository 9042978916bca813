/** Version facts reported by --version and /version. */
export const CORECTL_VERSION = '0.1.0';
/** The Kubernetes API level we emulate; kubectl's dispatcher picks its binary by this minor. */
export const KUBE_MAJOR = '1';
export const KUBE_MINOR = '33';
export const GIT_VERSION = `v${KUBE_MAJOR}.${KUBE_MINOR}.0+corectl.${CORECTL_VERSION}`;
