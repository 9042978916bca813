#!/usr/bin/env node
// Writes docs/options/<daemon>.md from the option tables (run after `make build`; `make docs`).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { optionDocsPages } from '../dist/src/flags/option-docs-pages.js';

const dir = join('docs', 'options');
mkdirSync(dir, { recursive: true });
for (const { file, text } of optionDocsPages()) writeFileSync(join(dir, file), text);
console.log(`gen-docs: wrote ${optionDocsPages().length} pages to ${dir}`);
