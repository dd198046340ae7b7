// The six event types of spec 6.1 and the delivery and webhook status names (part 3 names none; ours are below).
export const EVENT_TYPES = ['computation.complete', 'computation.error', 'batch.progress', 'batch.complete', 'batch.error', 'webhook.test'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export type WebhookStatus = 'enabled' | 'disabled';
export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/** Spec 6.3: the delay before attempt n+1 after attempt n failed (attempt 1 is immediate); 5 attempts in all. */
export const RETRY_DELAYS_MS = [5_000, 30_000, 300_000, 3_600_000] as const;
export const MAX_ATTEMPTS = 5;
/** Spec 6.3: a receiver answers 2xx within 30 s. */
export const RESPONSE_WINDOW_MS = 30_000;
