import { existsSync, mkdirSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeDirs } from '../../src/util/make-dirs.js';
import { tempDirs } from '../helpers/cli.js';

const tempDir = tempDirs('svc-make-dirs-');

describe('makeDirs', () => {
  it('makes the missing parents with the mode and returns the first it made', async () => {
    const root = await tempDir();
    const dir = join(root, 'a', 'b', 'c');
    expect(await makeDirs(dir, 0o700)).toBe(join(root, 'a'));
    for (const d of [join(root, 'a'), join(root, 'a', 'b'), dir]) expect(statSync(d).mode & 0o777).toBe(0o700);
  });

  it('an existing directory (or a link to one) is left as it is: undefined', async () => {
    const root = await tempDir();
    mkdirSync(join(root, 'there'), { mode: 0o755 });
    writeFileSync(join(root, 'there', 'f'), '');
    symlinkSync(join(root, 'there'), join(root, 'link'));
    expect(await makeDirs(join(root, 'there'), 0o700)).toBeUndefined();
    expect(await makeDirs(join(root, 'link'), 0o700)).toBeUndefined();
    expect(statSync(join(root, 'there')).mode & 0o777).toBe(0o755);
    expect(readdirSync(join(root, 'there'))).toEqual(['f']);
  });

  it("a file in the way, or a link to nothing, is mkdir's EEXIST; a path below a file is ENOTDIR", async () => {
    const root = await tempDir();
    writeFileSync(join(root, 'file'), '');
    symlinkSync(join(root, 'nowhere'), join(root, 'dangling'));
    await expect(makeDirs(join(root, 'file'))).rejects.toMatchObject({ code: 'EEXIST', syscall: 'mkdir', path: join(root, 'file') });
    await expect(makeDirs(join(root, 'dangling', 'x'))).rejects.toMatchObject({ code: 'EEXIST', syscall: 'mkdir', path: join(root, 'dangling') });
    await expect(makeDirs(join(root, 'file', 'x', 'y'))).rejects.toMatchObject({ code: 'ENOTDIR', syscall: 'mkdir' });
    expect(existsSync(join(root, 'nowhere'))).toBe(false);
  });

  // Node's recursive mkdir never settles here: mkdir answers ENOENT, /proc stands (EEXIST), and it tries again.
  it.skipIf(!existsSync('/proc'))(
    'under /proc: ENOENT naming the directory /proc refuses, at once',
    async () => {
      await expect(makeDirs('/proc/svc-node-test')).rejects.toMatchObject({ code: 'ENOENT', syscall: 'mkdir', path: '/proc/svc-node-test' });
      await expect(makeDirs('/proc/svc-node-test/a/b')).rejects.toMatchObject({ code: 'ENOENT', syscall: 'mkdir', path: '/proc/svc-node-test' });
    },
    5_000,
  );
});
