// Autotick (spec 2.7, part 8): a channel with autotick on seals one tick once every tickIntervalZeqonds ticks of the
// clock, counted from its last seal (or its creation). The set of such channels is in the store, so a restart picks
// them up; ticks missed while the node was down are not made up (one seal when it is due again). When the owner's
// balance cannot pay (402), autotick stops and the channel records why, so a restart does not start it again.
import { stampAt, type Clock } from '../kernel/clock.js';
import { ServiceError } from '../kernel/errors.js';
import type { StreamService } from './channels.js';

export const TICK_MS = 777.000777;

export interface AutotickDeps {
  streams: StreamService;
  clock: Clock;
  onError?: (channelId: string, err: unknown) => void;
}

export class Autotick {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;

  constructor(private readonly deps: AutotickDeps) {}

  /** Seal every channel that is due, once; concurrent calls share one pass. Resolves to the ticks sealed. */
  runDue(): Promise<number> {
    if (this.running) return this.running;
    const run = this.pass().finally(() => {
      this.running = null;
    });
    this.running = run;
    return run;
  }

  private async pass(): Promise<number> {
    const { streams } = this.deps;
    const now = stampAt(this.deps.clock.nowNs()).svcond;
    let sealed = 0;
    for (const id of [...streams.autotickIds]) {
      try {
        const c = await streams.get(id);
        if (c.status !== 'open' || !c.autotick) continue;
        if (now < (c.last_svcond ?? c.created_svcond) + c.tick_interval) continue;
        await streams.tick(id);
        sealed++;
      } catch (err) {
        if (err instanceof ServiceError && err.status === 402) await streams.stopAutotick(id, 'insufficient_balance').catch(() => undefined);
        else if (err instanceof ServiceError && err.status === 404) streams.autotickIds.delete(id);
        else this.deps.onError?.(id, err);
      }
    }
    return sealed;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.runDue(), TICK_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.running) await this.running.catch(() => undefined);
  }
}
