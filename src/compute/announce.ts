// The sealed-result announcement: a compact signed event on svc/events/1 for each sealed result, what re-execution
// keys on at the other nodes. Sent after the seal's batch is durable; a publish failure loses only the announcement.
import type { SealedSummary } from './service.js';

export const RESULT_SEALED = 'result.sealed';

export interface SealedAnnouncerDeps {
  /** False while the node has no mesh: nothing is announced. */
  enabled: () => boolean;
  /** Publish an event of this type on the events topic. */
  publish: (type: string, body: SealedSummary) => Promise<unknown>;
  onError: (err: unknown) => void;
}

export function sealedAnnouncer(deps: SealedAnnouncerDeps): (summary: SealedSummary) => void {
  return (summary) => {
    if (!deps.enabled()) return;
    void deps.publish(RESULT_SEALED, summary).catch(deps.onError);
  };
}
