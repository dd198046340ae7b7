// The README's dashboard screenshots: two in-process nodes in one mesh on 127.0.0.1, some traffic on the first (an
// identity, sealed results, a few refused requests, its operator's bond), then Debian's Chromium (playwright-core)
// takes docs/img/dashboard.png at 1,280 × 800 and docs/img/dashboard-phone.png at a phone's width.
// Usage: npx tsx scripts/dashboard-shot.ts [--seals 40] (CHROMIUM_PATH overrides /usr/bin/chromium)
import '../src/polyfill.js';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { chromium } from 'playwright-core';
import { loadConfig } from '../src/config/load.js';
import { SvcNode } from '../src/node/node.js';
import { numberArg } from './bench/lib.js';
import { helpFromHeader } from './help.js';

helpFromHeader(import.meta.url);

// The page.waitForFunction callbacks run in Chromium: the part of the DOM they read.
declare const document: { getElementById(id: string): { textContent: string | null } | null };

const SEALS = numberArg('seals', 40);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const OUT = resolve(import.meta.dirname, '../docs/img');
const SECRET = 'dashboard-shot-secret-0123456789abcdef';
const COMPUTE = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } };

async function call(url: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url + path, {
    method,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text) as Record<string, any>, text };
}

async function expectStatus(what: string, status: number, reply: Promise<{ status: number; text: string }>) {
  const r = await reply;
  if (r.status !== status) throw new Error(`${what}: expected ${status}, got ${r.status} ${r.text}`);
  return r as Awaited<ReturnType<typeof call>>;
}

async function startNode(dir: string, bootstrap: string[]): Promise<SvcNode> {
  const config = loadConfig({
    env: {},
    overrides: {
      port: 0,
      host: '127.0.0.1',
      dataDir: dir,
      logLevel: 'silent',
      mesh: { secret: SECRET, p2pPort: 0, bootstrap, tickEvery: 1 },
      contribution: { bondEnvelopes: 4, offload: 'never' },
    },
  });
  return new SvcNode(config, { logger: pino({ level: 'silent' }), machineSampleMs: 1000 }).start();
}

async function main(): Promise<void> {
  const dirs = [await mkdtemp(join(tmpdir(), 'svc-shot-')), await mkdtemp(join(tmpdir(), 'svc-shot-'))];
  const a = await startNode(dirs[0]!, []);
  const b = await startNode(dirs[1]!, [a.mesh.multiaddrs()[0]!]);
  const profile = await mkdtemp(join(tmpdir(), 'svc-chromium-'));
  try {
    // An identity (register, log in, mint a key), its sealed results, a few refused requests, and its bond.
    const digest = createHash('sha256').update('equation:dashboard-shot').digest('hex');
    await expectStatus('register', 201, call(a.url, 'POST', '/api/svc-auth/register-v3', { equation_sha256: digest }));
    const login = await expectStatus('login', 200, call(a.url, 'POST', '/api/svc-auth/login-v3', { equation_sha256: digest }));
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
    const key = (await expectStatus('api key', 201, call(a.url, 'POST', '/api/auth/api-key', { kind: 'sk' }, { cookie }))).body.key as string;
    const auth = { authorization: `Bearer ${key}` };
    for (let i = 0; i < SEALS; i++) {
      await expectStatus('compute', 200, call(a.url, 'POST', '/api/svc/compute', { ...COMPUTE, inputs: { mass_kg: 1 + i, velocity_m_s: 3 } }, auth));
      if (i % 8 === 0) await expectStatus('refused compute', 400, call(a.url, 'POST', '/api/svc/compute', { ...COMPUTE, domain: 'astrology' }, auth));
    }
    const token = readFileSync(join(dirs[0]!, 'operator-token'), 'utf8').trim();
    await expectStatus('bond', 201, call(a.url, 'POST', '/api/contribute/bond', {}, { ...auth, 'x-svc-operator-token': token }));
    // A few samples for the sparklines, and the peer heard.
    await new Promise((r) => setTimeout(r, 6000));

    const browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      viewport: { width: 1280, height: 800 },
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    try {
      const page = await browser.newPage();
      await page.goto(`${a.url}/`, { waitUntil: 'domcontentloaded' });
      await page.waitForFunction(() => /live/.test(document.getElementById('peers')?.textContent ?? ''), undefined, { timeout: 20_000 });
      await page.waitForFunction(() => /sealed here/.test(document.getElementById('sealed-here')?.textContent ?? ''), undefined, { timeout: 10_000 });
      await page.waitForTimeout(2500);
      await page.screenshot({ path: join(OUT, 'dashboard.png'), fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      await page.waitForTimeout(500);
      await page.screenshot({ path: join(OUT, 'dashboard-phone.png'), fullPage: true });
    } finally {
      await browser.close();
    }
    console.log(JSON.stringify({ screenshots: [join(OUT, 'dashboard.png'), join(OUT, 'dashboard-phone.png')], seals: SEALS }));
  } finally {
    await b.stop();
    await a.stop();
    await Promise.all([...dirs, profile].map((d) => rm(d, { recursive: true, force: true })));
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
