// UTC days: the key of a day (day counters, quotas) and when the next one starts (reset times).

/** The last day key made, and the [start, end) of its day in ms: most calls fall in the same day. */
let lastDay = { key: '', start: 0, end: -1 };

/** UTC day key, e.g. '2026-11-21'. */
export function dayKey(unixMs: number): string {
  if (unixMs >= lastDay.start && unixMs < lastDay.end) return lastDay.key;
  const key = new Date(unixMs).toISOString().slice(0, 10);
  const start = Date.UTC(Number(key.slice(0, 4)), Number(key.slice(5, 7)) - 1, Number(key.slice(8, 10)));
  lastDay = { key, start, end: start + 86_400_000 };
  return key;
}

export function nextMidnightUtc(unixMs: number): number {
  const d = new Date(unixMs);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
}
