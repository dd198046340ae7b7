// Contribution modes (architecture.md §6, spec part 3): idle | contributing | experimenting, per identity, kept at
// the identity's home. Contributing needs an active bond; contributing and experimenting are mutually exclusive,
// which one field gives: asking for the other replaces it. Preempting the identity's running contributed work on
// a switch is the exec handler's (consensus/exec-handler.ts), told through onSwitch.
import { InputError, ServiceError } from '../kernel/errors.js';
import type { Json, Op, Store, Sublevel } from '../store/db.js';
import type { BondService } from './bonds.js';
import { ACCEPTED_MODES, REFUSED_MODES, type Mode } from './policy.js';

export interface ModeRecord {
  mode: Mode;
  /** Tick of the last switch. */
  svcond: number;
}

export class ModeService {
  private readonly sub: Sublevel;
  private readonly modes = new Map<string, ModeRecord>();
  /** Told of every switch once it is durable (the exec handler preempts the operator's contributed runs). */
  private readonly switchListeners: ((zid: string, previous: Mode, mode: Mode) => void)[] = [];

  constructor(
    private readonly store: Store,
    private readonly bonds: BondService,
    private readonly nowSvcond: () => number,
  ) {
    this.sub = store.sub('modes');
  }

  async load(): Promise<void> {
    for (const { key, value } of await this.store.range<ModeRecord>(this.sub)) this.modes.set(key, value);
  }

  onSwitch(listener: (zid: string, previous: Mode, mode: Mode) => void): void {
    this.switchListeners.push(listener);
  }

  private switched(zid: string, previous: Mode, mode: Mode): void {
    if (previous === mode) return;
    for (const l of this.switchListeners) l(zid, previous, mode);
  }

  /** An identity's mode (idle when it never chose one). */
  of(zid: string): ModeRecord {
    return this.modes.get(zid) ?? { mode: 'idle', svcond: 0 };
  }

  /**
   * Switch `zid`'s mode. 400 SVC_INVALID_INPUT for a refused mode (policy.ts REFUSED_MODES), 403 SVC_NO_BOND for
   * contributing without an active bond. Returns the previous mode too.
   */
  async set(zid: string, mode: Mode): Promise<{ mode: Mode; previous: Mode; svcond: number }> {
    const refused = REFUSED_MODES[mode];
    if (refused !== undefined) throw new InputError('mode', `${mode} is ${refused}`, ACCEPTED_MODES);
    if (mode === 'contributing' && !this.bonds.ofZid(zid)) {
      throw new ServiceError(403, 'SVC_NO_BOND', 'contributing needs an active bond: POST /api/contribute/bond first', { required: 'bond', mode });
    }
    const previous = this.of(zid);
    const next: ModeRecord = { mode, svcond: this.nowSvcond() };
    // Decided and applied synchronously (a later switch wins), undone if the write fails.
    this.modes.set(zid, next);
    try {
      await this.store.commit([this.putOp(zid, next)]);
    } catch (err) {
      if (this.modes.get(zid) === next) this.modes.set(zid, previous);
      throw err;
    }
    this.switched(zid, previous.mode, mode);
    return { mode, previous: previous.mode, svcond: next.svcond };
  }

  /**
   * For a release: the ops that return a contributing identity to idle (in the release's batch) and what applies
   * it in memory once that batch is durable. Nothing when the identity is not contributing.
   */
  idleOnRelease(zid: string): { ops: Op[]; apply: () => void } {
    if (this.of(zid).mode !== 'contributing') return { ops: [], apply: () => undefined };
    const next: ModeRecord = { mode: 'idle', svcond: this.nowSvcond() };
    return {
      ops: [this.putOp(zid, next)],
      apply: () => {
        this.modes.set(zid, next);
        this.switched(zid, 'contributing', 'idle');
      },
    };
  }

  private putOp(zid: string, rec: ModeRecord): Op {
    return { type: 'put', sub: this.sub, key: zid, value: rec as unknown as Json };
  }
}
