// The counter names have one home (store/counter-keys.ts): quota.ts prunes the day counters by their
// prefixes, and two names under one prefix must not collide, which only one file can see.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DAY_COUNTER_PREFIXES, demoDayCounter, demoMintCounter } from '../../src/store/counter-keys.js';

describe('counter names', () => {
  it('every day counter is named in store/counter-keys.ts, nowhere else in src', () => {
    const src = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src');
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
      );
    // A day counter: one of the pruned prefixes, then the day, then a colon.
    const dayName = new RegExp('`(?:' + DAY_COUNTER_PREFIXES.map((p) => p.slice(0, -1)).join('|') + '):\\$\\{[^}]+\\}:');
    const found = files(src)
      .map((f) => relative(src, f))
      .filter((rel) => rel !== join('store', 'counter-keys.ts') && dayName.test(readFileSync(join(src, rel), 'utf8')));
    expect(found).toEqual([]);
  });

  it("an IP's demo-key mints share the demo day prefix (pruned with it) and never a demo key's own counter", () => {
    expect(DAY_COUNTER_PREFIXES.some((p) => demoMintCounter('2026-11-26', '127.0.0.1').startsWith(p))).toBe(true);
    expect(demoMintCounter('2026-11-26', '127.0.0.1')).not.toBe(demoDayCounter('2026-11-26', '127.0.0.1'));
  });
});
