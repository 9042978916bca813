/**
 * Which parsed options the code reads, for the not-acted-on tests: the source files are parsed
 * by the TypeScript compiler in node_modules (its API), and a config field counts as read only
 * where the syntax tree reads a property of that name: `x.field`, `x['field']` (not as the
 * target of an assignment), or a destructuring `{ field }` / `{ field: y }`. A name in a
 * comment, a string or an object literal key never counts.
 * The files searched are src/ without src/flags and without the other daemons' folders (their
 * own options may share a field name: --port is every daemon's).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { API } from 'typescript/unstable/sync';
import * as is from 'typescript/unstable/ast/is';
import { SyntaxKind, type Node } from 'typescript/unstable/ast';

export const DAEMON_FOLDERS = ['apiserver', 'controller-manager', 'nodeagent', 'scheduler', 'proxy', 'metrics-server', 'server'] as const;
export type DaemonFolder = typeof DAEMON_FOLDERS[number];

const repo = fileURLToPath(new URL('../../../', import.meta.url));

function sources(dir: string, skip: (p: string) => boolean): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return skip(p) ? [] : sources(p, skip);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

function readsIn(node: Node, out: Set<string>): void {
  if (is.isPropertyAccessExpression(node) && !isAssigned(node)) out.add(node.name.text);
  else if (is.isElementAccessExpression(node) && is.isStringLiteral(node.argumentExpression) && !isAssigned(node)) out.add(node.argumentExpression.text);
  else if (is.isBindingElement(node) && node.parent && is.isObjectBindingPattern(node.parent)) {
    const key = node.propertyName ?? node.name;
    if (key && (is.isIdentifier(key) || is.isStringLiteral(key))) out.add(key.text);
  }
  node.forEachChild((c) => { readsIn(c, out); });
}

/** `x.a = 1` writes a; `x.a += 1` and `x.a.b = 1` read it. */
function isAssigned(node: Node): boolean {
  const p = node.parent;
  return !!p && is.isBinaryExpression(p) && p.left === node && p.operatorToken.kind === SyntaxKind.EqualsToken;
}

/** Property names read in the code that may act on `daemon`'s options. */
export function propertyReads(daemon: DaemonFolder): Set<string> {
  const others = DAEMON_FOLDERS.filter((d) => d !== daemon);
  const skip = (p: string): boolean => p.endsWith('/src/flags') || others.some((d) => p.endsWith(`/src/daemons/${d}`));
  return propertyReadsIn(sources(join(repo, 'src'), skip));
}

let session: { api: API; program: { getSourceFile(f: string): Node | undefined } } | undefined;

/** One compiler session per test process (parsing the project takes seconds); closed on exit. */
function program(): { getSourceFile(f: string): Node | undefined } {
  if (session) return session.program;
  const api = new API({ cwd: repo });
  const project = api.updateSnapshot({ openProject: join(repo, 'tsconfig.json') }).getProjects()[0];
  if (!project) { api.close(); throw new Error('the TypeScript API opened no project'); }
  session = { api, program: project.program };
  process.once('exit', () => session?.api.close());
  return session.program;
}

/** Property names read in these files (each must belong to the repository's tsconfig project). */
export function propertyReadsIn(files: readonly string[]): Set<string> {
  const p = program();
  const out = new Set<string>();
  for (const f of files) {
    const sf = p.getSourceFile(f);
    if (!sf) throw new Error(`${f} is not in the program`);
    readsIn(sf, out);
  }
  return out;
}

/** The repository's root (for fixtures). */
export const REPO_ROOT = repo;
