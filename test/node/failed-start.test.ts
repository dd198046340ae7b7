// A node whose start fails has stopped what it started: its store is closed, so the same data dir opens again in the
// same process (an open store would refuse it: LEVEL_LOCKED) and can be removed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { busyPort, freePort } from '../helpers/free-port.js';
import { startTestNode } from '../helpers/node.js';
import { tempDirs } from '../helpers/cli.js';

const tempDir = tempDirs('svc-failed-start-');
let held: Awaited<ReturnType<typeof busyPort>>;

beforeAll(async () => {
  held = await busyPort();
});
afterAll(() => held.release());

describe('a start that fails closes the store', () => {
  it('when the HTTP port is taken (a part fails while the node is wired)', async () => {
    const dataDir = await tempDir();
    await expect(startTestNode({ port: held.port }, {}, dataDir)).rejects.toMatchObject({ code: 'EADDRINUSE', port: held.port });
    const t = await startTestNode({}, {}, dataDir);
    await t.stop();
  });

  it('when the metrics port is taken after the API listens: the API port is given back too', async () => {
    const dataDir = await tempDir();
    const port = await freePort();
    await expect(startTestNode({ port, metrics: { host: '127.0.0.1', port: held.port } }, {}, dataDir)).rejects.toMatchObject({
      code: 'EADDRINUSE',
      port: held.port,
    });
    const t = await startTestNode({ port }, {}, dataDir);
    expect(new URL(t.url).port).toBe(String(port));
    await t.stop();
  });

  it('when the libp2p port is taken (a part fails as it starts)', async () => {
    const dataDir = await tempDir();
    const mesh = { secret: 'a-mesh-secret-of-the-test', p2pPort: held.port };
    await expect(startTestNode({ mesh }, {}, dataDir)).rejects.toMatchObject({ name: 'UnsupportedListenAddressesError' });
    const t = await startTestNode({}, {}, dataDir);
    await t.stop();
  });
});
