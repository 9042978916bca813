/** AlwaysAdmit: admits everything (Kubernetes keeps it as a no-op for old configurations). */
import type { AdmissionPlugin } from './types.js';

export function alwaysAdmit(): AdmissionPlugin {
  return { name: 'AlwaysAdmit', handles: () => false };
}
