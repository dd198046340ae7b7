// The dashboard (GET /) in a real headless Chromium (Debian's chromium, driven by playwright-core): it loads
// without console errors, its tick advances from the SSE pulse stream, it lists the peers of a 3-node in-process
// cluster with their health, shows the machine's figures, the node's own bond and its own seals, fits a 1,280 × 800
// screen with no table overflowing its panel, and reads on a phone's width. Screenshots go to test-artifacts/
// (gitignored; docs/img/dashboard.png comes from scripts/dashboard-shot.ts). One browser launch.
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type BrowserContext } from 'playwright-core';
import { bearer, call, operatorBond, startTestNode, zkIdentity, type TestNode } from '../helpers/node.js';
import { waitUntil } from '../helpers/wait.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = resolve(__dirname, '../../test-artifacts');
const MESH_SECRET = 'dashboard-test-secret-0123456789abcdef';

// The page.waitForFunction / page.evaluate callbacks below run in Chromium, not in Node. The part of the DOM they
// read, declared for this file only (a `/// <reference lib="dom" />` would give every test file the DOM globals).
interface PageElement {
  textContent: string | null;
  tagName: string;
  id: string;
  className: string;
  getBoundingClientRect(): { right: number };
  closest(selector: string): PageElement | null;
  scrollWidth: number;
  clientWidth: number;
}
declare const document: {
  documentElement: { clientWidth: number; scrollWidth: number };
  getElementById(id: string): PageElement | null;
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): Iterable<PageElement> & { length: number };
};

let nodes: TestNode[] = [];
let browser: BrowserContext;
let profile: string;

const waitFor = <T>(fn: () => Promise<T | null | false | undefined> | T | null | false | undefined, what: string, timeoutMs = 20_000) =>
  waitUntil(fn, what, timeoutMs, 100);

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (.ci/run does)`);
  const config = (bootstrap: string[]) => ({
    mesh: { secret: MESH_SECRET, p2pPort: 0, bootstrap, tickEvery: 1 },
    contribution: { bondEnvelopes: 1, offload: 'never' },
  });
  const opts = { mesh: { redialMinMs: 100, redialMaxMs: 1000 }, machineSampleMs: 500 };
  const a = await startTestNode(config([]), opts);
  const b = await startTestNode(config([a.node.mesh.multiaddrs()[0]!]), opts);
  const c = await startTestNode(config([a.node.mesh.multiaddrs()[0]!, b.node.mesh.multiaddrs()[0]!]), opts);
  nodes = [a, b, c];
  profile = await mkdtemp(join(tmpdir(), 'svc-chromium-'));
  [browser] = await Promise.all([
    // A fresh profile (--user-data-dir) of our own: playwright takes it as launchPersistentContext's first argument.
    chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      viewport: { width: 1280, height: 800 },
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    }),
    waitFor(() => nodes.every((n) => n.node.mesh.peers().filter((p) => p.url).length >= 2), 'every node hearing both others'),
  ]);
  // Seals are shown and announced only when their owners publish them.
  const id = await zkIdentity(a.url, 'dashboard');
  expect((await call(a.url, 'POST', '/api/tally/settings/publish-default', { publish_default: true }, bearer(id.key))).status).toBe(200);
  const sealed = await call(
    a.url,
    'POST',
    '/api/svc/compute',
    { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } },
    bearer(id.key),
  );
  expect(sealed.status, sealed.text).toBe(200);
  // One sealed at B: A's dashboard shows it from B's announcement.
  const atB = await zkIdentity(nodes[1]!.url, 'dashboard-b');
  expect((await call(nodes[1]!.url, 'POST', '/api/tally/settings/publish-default', { publish_default: true }, bearer(atB.key))).status).toBe(200);
  const heard = await call(
    nodes[1]!.url,
    'POST',
    '/api/svc/compute',
    { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 5, velocity_m_s: 3 } },
    bearer(atB.key),
  );
  expect(heard.status, heard.text).toBe(200);
  const bond = await call(a.url, 'POST', '/api/contribute/bond', {}, { ...bearer(id.key), ...operatorBond(a) });
  expect(bond.status, bond.text).toBe(201);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await Promise.all(nodes.map((n) => n.destroy()));
  if (profile) await rm(profile, { recursive: true, force: true });
});

describe('dashboard in Chromium', () => {
  it('loads without console errors, ticks live, shows the machine, own bond, own seals and healthy peers, fits 1280 × 800 and a phone', async () => {
    const [a, b, c] = nodes as [TestNode, TestNode, TestNode];
    const problems: string[] = [];
    const page = await browser.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));

    const res = await page.goto(`${a.url}/`, { waitUntil: 'domcontentloaded' });
    expect(res?.status()).toBe(200);
    await page.waitForFunction(() => /^\d+$/.test(document.getElementById('tick')!.textContent ?? ''), undefined, { timeout: 10_000 });
    const first = Number(await page.textContent('#tick'));
    await page.waitForFunction((t) => Number(document.getElementById('tick')!.textContent) > t, first, { timeout: 10_000 });
    expect(await page.textContent('#live')).toBe('live');
    expect(await page.textContent('#node')).toBe(a.node.nodeId);

    // The other two nodes, by their full peer ids (in the cells' titles), with a last tick.
    await page.waitForFunction((ids) => ids.every((id) => document.querySelector(`#peers td[title="${id}"]`)), [b.node.nodeId, c.node.nodeId], {
      timeout: 10_000,
    });
    expect(await page.textContent('#mesh-summary')).toMatch(/3 nodes/);
    await page.waitForFunction(() => document.querySelectorAll('#seals tr td.mono').length > 0, undefined, { timeout: 10_000 });
    // Both other nodes live (ticking within their interval), none refusing handshakes.
    await page.waitForFunction(() => [...document.querySelectorAll('#peers tr')].filter((r) => /live/.test(r.textContent ?? '')).length === 2, undefined, {
      timeout: 10_000,
    });
    // The node's own bond and its own seal, with their real values; the machine's figures filled in.
    expect(await page.textContent('#own-bond')).toBe('active');
    expect(await page.textContent('#own-bond-detail')).toMatch(/^1 envelope · since tick \d+$/);
    expect(await page.getAttribute('#own-bond', 'title')).toMatch(/^bond_[0-9a-f]{24}$/);
    // The seals table can be drawn from the mesh's events before the node's stats (its count) have come back, and the
    // count is the machine's sample's (every machineSampleMs), which may be one taken before the seal.
    await page.waitForFunction(() => document.getElementById('sealed-here')!.textContent !== '', undefined, { timeout: 10_000 });
    await page.waitForFunction(() => document.getElementById('sealed-here')!.textContent !== '0 sealed here', undefined, { timeout: 10_000 });
    expect(await page.textContent('#sealed-here')).toBe('1 sealed here');
    expect(await page.textContent('#seals')).toContain('this node');
    expect(await page.textContent('#seals')).toContain('9 J');
    // B's seal, from the announcement B made at the end of its tick interval.
    await page.waitForFunction((id) => !!document.querySelector(`#seals td[title="${id}"]`), b.node.nodeId, { timeout: 15_000 });
    expect(await page.textContent('#seals')).toContain('22.5 J');
    expect(await page.textContent('#mode')).toBe('idle');
    expect(await page.textContent('#rpm')).toMatch(/^\d/);
    expect(await page.textContent('#rss')).toMatch(/^\d+(\.\d)? (MB|GB)$/);
    expect(await page.getAttribute('#disk-free', 'title')).toMatch(/free of/);
    // The request groups come with the machine's sample (every machineSampleMs): the one taken after the compute.
    await page.waitForFunction(() => /compute/.test(document.getElementById('groups')!.textContent ?? ''), undefined, { timeout: 10_000 });
    expect(await page.textContent('#alarms')).toBe('No alarms.');

    // 1,280 × 800: the page does not scroll sideways, and no panel or table inside one is wider than its box.
    const clipped = await page.evaluate(() => {
      const out: string[] = [];
      const page = document.documentElement;
      if (page.scrollWidth > page.clientWidth) out.push(`page ${page.scrollWidth} > ${page.clientWidth}`);
      for (const el of document.querySelectorAll('.card, .card .scroll'))
        if (el.scrollWidth > el.clientWidth) out.push(`${el.id || el.className} ${el.scrollWidth} > ${el.clientWidth}`);
      return out;
    });
    expect(clipped).toEqual([]);

    await mkdir(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard.png'), fullPage: true });

    // A phone's width: no horizontal scrolling of the page itself.
    await page.setViewportSize({ width: 390, height: 844 });
    const overflow = await page.evaluate(() => {
      const width = document.documentElement.clientWidth;
      const wide = [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > width + 1 && !e.closest('.card table'));
      return { by: document.documentElement.scrollWidth - width, wide: wide.slice(0, 5).map((e) => `${e.tagName}#${e.id}.${e.className}`) };
    });
    expect(overflow, JSON.stringify(overflow.wide)).toMatchObject({ by: 0 });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-phone.png'), fullPage: true });

    expect(problems).toEqual([]);
    await page.close();
  }, 40_000);
});
