// The five tiers of part 8 ("tier daily allowances 143, 500, 2500, 7500, 25000 across five tiers"): free and four
// paid ones. The names are ours (part 8 names free, standard and professional in its time-outs only). An operator
// grant sets an identity's tier; what a tier unlocks is item 6 of issue 18.
export const TIERS = ['free', 'starter', 'standard', 'professional', 'enterprise'] as const;
export type Tier = (typeof TIERS)[number];

export const TIER_DAILY_ALLOWANCE: Record<Tier, number> = { free: 143, starter: 500, standard: 2500, professional: 7500, enterprise: 25000 };
