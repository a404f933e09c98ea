/**
 * `onceonly/providers`: one file per provider, file name = export name.
 */
export { type HmacOptions, hmac, type SignedContentInput } from './hmac.js';
export type { SecretInput } from './shared.js';
export type { DeliveryInput, EventMapOf, EventOf, Provider, Verified } from './types.js';
