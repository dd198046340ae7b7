// Polling until a condition holds, for tests that wait on another process, node or the mesh.

/** Resolves with fn's first truthy answer; throws `timed out waiting for <what>` after timeoutMs. */
export async function waitUntil<T>(
  fn: () => Promise<T | null | false | undefined> | T | null | false | undefined,
  what: string,
  timeoutMs = 15_000,
  everyMs = 50,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as T;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
