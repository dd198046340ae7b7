import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dataDirBefore, removeStartLeftovers } from '../../src/cli/start-leftovers.js';
import { tempDirs } from '../helpers/cli.js';

const tempDir = tempDirs('svc-start-leftovers-');

describe('what a failed start removes', () => {
  it('a data dir that was missing goes from its first missing parent down', async () => {
    const root = await tempDir();
    const before = await dataDirBefore(join(root, 'a', 'b'));
    expect(before).toEqual({ kind: 'missing', top: join(root, 'a') });
    mkdirSync(join(root, 'a', 'b'), { recursive: true });
    writeFileSync(join(root, 'a', 'b', 'node-key'), 'k');
    expect(await removeStartLeftovers(before, new Error('listen EADDRINUSE'))).toEqual([join(root, 'a')]);
    expect(readdirSync(root)).toEqual([]);
  });

  it('nothing, when another node holds the store: it may have made the same new data dir meanwhile', async () => {
    for (const err of [{ code: 'LEVEL_LOCKED' }, Object.assign(new Error('Database failed to open'), { cause: { code: 'LEVEL_LOCKED' } })]) {
      const dir = join(await tempDir(), 'data');
      const before = await dataDirBefore(dir);
      expect(before.kind).toBe('missing');
      mkdirSync(join(dir, 'db'), { recursive: true });
      expect(await removeStartLeftovers(before, err)).toEqual([]);
      expect(existsSync(join(dir, 'db'))).toBe(true);
    }
  });

  it('nothing from a data dir that held a store before', async () => {
    const dir = await tempDir();
    mkdirSync(join(dir, 'db'));
    const before = await dataDirBefore(dir);
    expect(before).toEqual({ kind: 'keep' });
    writeFileSync(join(dir, 'credential-secret'), 's');
    expect(await removeStartLeftovers(before, new Error('listen EADDRINUSE'))).toEqual([]);
    expect(readdirSync(dir).sort()).toEqual(['credential-secret', 'db']);
  });
});
