// docs/options/*.md are generated from the option tables: a committed page that differs from
// what the tables give now (an option added, a default changed, an option now acted on) fails.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { optionDocsPages } from '../../src/flags/option-docs-pages.js';

for (const { file, text } of optionDocsPages()) {
  t.test(file, async (t) => {
    let committed = '';
    try { committed = readFileSync(join('docs', 'options', file), 'utf8'); } catch { /* missing: fails below */ }
    t.ok(committed === text, `docs/options/${file} is current (run: make docs)`);
  });
}

t.test('a page names each option, its default and the not-acted-on reason', async (t) => {
  const api = optionDocsPages().find((p) => p.file === 'apiserver.md')!.text;
  t.match(api, /\| `--secure-port` \| int \| `6443` \|/);
  t.match(api, /\| `--cloud-provider` \|.*\*\*not acted on yet\*\*: no cloud provider is built in/);
});
