// The 80/20 split, exact over time (architecture.md §7). Each charge gives the foundation the increase of
// ⌊20 % of the running total charged⌋, so over any run of charges the foundation has exactly ⌊20 % of the sum⌋:
// the fraction a charge leaves is carried into the next one instead of being burned (⌊20 % of 1⌋ = 0 per cost-1
// charge, but 200 over 1,000 of them).
export const FOUNDATION_SHARE_PERCENT = 20;

/** The split of a charge of `cost` credits made after `chargedBefore` credits were charged on the same running total. */
export function splitCharge(cost: number, chargedBefore = 0): { burned: number; foundation: number } {
  const foundation = foundationShare(chargedBefore + cost) - foundationShare(chargedBefore);
  return { burned: cost - foundation, foundation };
}

/** ⌊20 % of `charged`⌋, in integers (exact for any total below 2^53 / 20). */
export function foundationShare(charged: number): number {
  return Math.floor((charged * FOUNDATION_SHARE_PERCENT) / 100);
}
