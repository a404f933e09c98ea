import { type BodyHmacSenderOptions, bodyHmacSenders } from './families/bodyHmacSenders.js';
import type { AuthenticatingProvider } from './types.js';

/** A Vercel webhook: `id`, `type` (`deployment.succeeded`...), `createdAt` and the `payload`. */
export interface VercelEvent {
  id: string;
  type: string;
  createdAt?: number;
  payload?: Record<string, unknown>;
  region?: string | null;
  [field: string]: unknown;
}

/**
 * `secret`: the webhook's secret, shown once when it is created (or the integration's client
 * secret); an array while rotating. `retention` (default `'3d'`): how long a completed event id is
 * remembered. Vercel retries failed deliveries with backoff; its window is not published, so the
 * 3-day default for unknown windows applies.
 */
export type VercelOptions = BodyHmacSenderOptions;

/**
 * Vercel: `x-vercel-signature: <hex>` over the body, HMAC-SHA1. Dedup keys on the signed event `id`;
 * the type is `type`.
 *
 * @example
 * createReceiver({ provider: vercel({ secret: process.env.VERCEL_WEBHOOK_SECRET! }), store, on: { 'deployment.succeeded': notify } });
 */
export function vercel<E = VercelEvent>(options: VercelOptions): AuthenticatingProvider<E> {
  return bodyHmacSenders.vercel(options) as AuthenticatingProvider<E>;
}
