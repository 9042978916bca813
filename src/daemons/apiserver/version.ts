/** GET /version: the build facts kubectl prints and compares (gitVersion must be semver). */
import { GIT_VERSION, KUBE_MAJOR, KUBE_MINOR } from '../../version.js';
import type { ApiResponse } from './context.js';

export interface VersionInfo {
  major: string;
  minor: string;
  gitVersion: string;
  gitCommit: string;
  gitTreeState: string;
  buildDate: string;
  goVersion: string;
  compiler: string;
  platform: string;
}

const ARCH: Record<string, string> = { x64: 'amd64', ia32: '386', arm64: 'arm64', arm: 'arm' };

export function versionInfo(): VersionInfo {
  return {
    major: KUBE_MAJOR,
    minor: KUBE_MINOR,
    gitVersion: GIT_VERSION,
    gitCommit: '',
    gitTreeState: '',
    buildDate: '1970-01-01T00:00:00Z',
    goVersion: `node${process.versions.node}`,
    compiler: 'tsc',
    platform: `${process.platform}/${ARCH[process.arch] ?? process.arch}`,
  };
}

export function serveVersion(method: string, res: ApiResponse): void {
  if (method !== 'GET' && method !== 'HEAD') {
    res.statusCode = 405;
    res.end();
    return;
  }
  const body = JSON.stringify(versionInfo(), null, 2);
  res.statusCode = 200;
  res.setHeader('Content-Type', 'application/json');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}
