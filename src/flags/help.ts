/** --help text of a daemon, produced from its option table and gate list. */
import type { DaemonFlagSet } from './parser.js';
import type { OptionSpec } from './option-spec.js';
import { valueType } from './value-types.js';

/** An option's default as --help and the option docs print it ('' = none). */
export function formatDefault(o: OptionSpec): string {
  if (o.default === undefined || o.default === '') return '';
  if (o.type === 'mapStringString') return o.default; // keeps the eviction form a<b readable
  const vt = valueType(o.type);
  return vt.format(vt.parse(o.default));
}

function typeText(o: OptionSpec): string {
  if (o.type === 'bool') return '';
  if (o.type === 'version') return 'version[=true|raw]';
  return o.type;
}

function optionLine(o: OptionSpec): [string, string] {
  const names = `${o.short ? `-${o.short}, ` : '    '}--${o.name}`;
  const type = typeText(o);
  let text = o.description;
  const def = formatDefault(o);
  if (def !== '') text += ` (default ${def})`;
  if (o.oneOf && !o.description.includes(o.oneOf[0] ?? '\u0000')) text += ` One of: ${o.oneOf.join(', ')}.`;
  if (o.deprecated) text += ` DEPRECATED: ${o.deprecated}.`;
  if (o.ours) text += ' [ours: beyond the reference]';
  return [`  ${names}${type ? ' ' + type : ''}`, text];
}

export function formatHelp<C>(set: DaemonFlagSet<C>): string {
  const lines: string[] = [`Usage: ${set.daemon} [options]`, '', set.summary, ''];
  const byGroup = new Map<string, OptionSpec[]>();
  for (const o of set.options) {
    if (o.hidden) continue;
    const list = byGroup.get(o.group) ?? [];
    list.push(o);
    byGroup.set(o.group, list);
  }
  const order = [...set.groups, ...[...byGroup.keys()].filter((g) => !set.groups.includes(g))];
  const rows = order.flatMap((g) => (byGroup.get(g) ?? []).map(optionLine));
  const width = Math.min(48, Math.max(...rows.map(([left]) => left.length)) + 2);
  for (const group of order) {
    const opts = byGroup.get(group);
    if (!opts) continue;
    lines.push(`${group}:`);
    for (const [left, right] of opts.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map(optionLine)) {
      lines.push(left.length + 2 > width ? `${left}\n${' '.repeat(width)}${right}` : `${left.padEnd(width)}${right}`);
    }
    lines.push('');
  }
  lines.push('Feature gates (--feature-gates=Name=true|false,...):');
  for (const g of set.gates) {
    const stage = g.stage === 'none' ? '' : `${g.stage.toUpperCase()} - `;
    lines.push(`  ${g.name}=true|false (${stage}default=${String(g.default)})`);
  }
  lines.push('');
  return lines.join('\n');
}
