// /api-docs-ui/ (issue 30, item 6) in a real browser: Debian's chromium, headless, driven by
// playwright-core, against a real API server (--authorization-mode=RBAC --enable-api-docs-ui).
// The page shell is granted to anonymous users by a ClusterRole the test makes (an operator's
// choice; by default only cluster-admin has it); everything the page loads or tries needs the
// bearer token typed into it. Checked: without the token the page says the index is refused;
// with it, the group/version list holds our groups, the core operations render (screenshot
// written to the test's temp dir as a PNG), and a try-it GET answers 200 in the page.
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { h2request, startApiserver } from '../helpers/apiserver.js';

const CHROMIUM = '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed (apt-get install chromium)`;
const TOKEN = 'docs-ui-admin-token-3f9a';
const G = 'rbac.authorization.k8s.io';

t.test('the API docs page in headless Chromium', { skip, timeout: 240_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-api-docs-ui-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const tokenFile = join(dir, 'tokens.csv');
  await writeFile(tokenFile, `${TOKEN},docs-admin,docs-admin-uid,"system:masters"\n`, { mode: 0o600 });
  const s = await startApiserver({ args: ['--authorization-mode=RBAC', '--enable-api-docs-ui', `--token-auth-file=${tokenFile}`] });
  t.teardown(() => s.stop());
  const admin = new RestClient({ connection: await loadCoreconfig({ path: s.coreconfigPath }), contentType: 'application/json' });
  t.teardown(() => admin.close());
  const role: KubeObject = { apiVersion: `${G}/v1`, kind: 'ClusterRole', metadata: { name: 'api-docs-ui-page' }, rules: [{ verbs: ['get'], nonResourceURLs: ['/api-docs-ui', '/api-docs-ui/*'] }] };
  const binding: KubeObject = {
    apiVersion: `${G}/v1`, kind: 'ClusterRoleBinding', metadata: { name: 'api-docs-ui-page' },
    roleRef: { apiGroup: G, kind: 'ClusterRole', name: 'api-docs-ui-page' }, subjects: [{ kind: 'Group', apiGroup: G, name: 'system:unauthenticated' }],
  };
  await admin.create({ group: G, version: 'v1', resource: 'clusterroles' }, role);
  await admin.create({ group: G, version: 'v1', resource: 'clusterrolebindings' }, binding);
  // The RBAC authorizer's cache follows the store: wait until the page is open to anonymous.
  const ca = await readFile(s.caFile);
  const deadline = Date.now() + 15_000;
  while ((await h2request(s.url, { path: '/api-docs-ui/', ca })).status !== 200) {
    if (Date.now() > deadline) throw new Error('the page never became readable anonymously');
    await new Promise((r) => setTimeout(r, 100));
  }
  t.equal((await h2request(s.url, { path: '/openapi/v3', ca })).status, 403, 'the API index itself stays closed to anonymous users');

  const { chromium } = await import('playwright-core');
  const profile = join(dir, 'chromium-profile');
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    ignoreHTTPSErrors: true, // the test CA is not in the browser's store
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 1600 },
  });
  t.teardown(() => context.close());
  const page = context.pages()[0] ?? await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error' && !/status of 403/.test(m.text())) problems.push(`console: ${m.text()}`); });
  const offSite: string[] = [];
  page.on('request', (r) => { if (!r.url().startsWith(s.url)) offSite.push(r.url()); });

  const first = await page.goto(`${s.url}/api-docs-ui`, { waitUntil: 'load' });
  t.equal(first?.status(), 200, 'the page loads (after the redirect to /api-docs-ui/)');
  await page.locator('#corectl-status', { hasText: 'GET /openapi/v3: 403' }).waitFor({ timeout: 20_000 });
  t.pass('without a token the page says the API index was refused');

  await page.fill('#corectl-token', TOKEN);
  await page.click('#corectl-use-token');
  const select = page.locator('.topbar select');
  await select.waitFor({ timeout: 30_000 });
  const names = await select.locator('option').allTextContents();
  for (const gv of ['api/v1', 'apis/apps/v1', 'apis/batch/v1', `apis/${G}/v1`]) t.ok(names.includes(gv), `listed: ${gv}`);
  t.ok(names.length >= 20, `${names.length} group versions listed`);

  const op = page.locator('#operations-core_v1-listCoreV1Namespace');
  await op.waitFor({ timeout: 60_000 });
  const shot = join(dir, 'api-docs-ui.png');
  await page.screenshot({ path: shot });
  if (process.env['API_DOCS_UI_SHOT']) await writeFile(process.env['API_DOCS_UI_SHOT'], await readFile(shot));
  const png = await readFile(shot);
  t.ok(png.length > 10_000 && png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), `a PNG screenshot (${png.length} bytes)`);
  t.match(await page.locator('.swagger-ui .info .title').first().textContent(), /Kubernetes|corectl/i, 'the document title is shown');
  await page.locator('.models, section.models').first().waitFor({ timeout: 10_000 });
  t.pass('the schemas section is there');

  await op.locator('.opblock-summary').first().click();
  await op.locator('button.try-out__btn').click();
  await op.locator('button.execute').click();
  const status = op.locator('.live-responses-table .response .response-col_status').first();
  await status.waitFor({ timeout: 30_000 });
  t.equal((await status.textContent())?.trim(), '200', 'try-it GET /api/v1/namespaces answers 200 in the page');
  t.match(await op.locator('.live-responses-table').first().textContent(), /"kind": "NamespaceList"/, 'with the list in the page');
  // For a person looking at the run: the page after the try-it.
  await page.screenshot({ path: join(dir, 'api-docs-ui-try-it.png') });
  if (process.env['API_DOCS_UI_SHOTS']) await writeFile(process.env['API_DOCS_UI_SHOTS'], await readFile(join(dir, 'api-docs-ui-try-it.png')));

  t.same(offSite, [], 'nothing loaded from anywhere but the API server');
  t.same(problems, [], 'no script errors');
});
