/**
 * What the framework adapters (src/adapters/) take from the receiver, in one place: adapters import
 * the receiver and nothing below it (test/architecture.test.ts), so the errors and provider type
 * they hand on come through here.
 */
export { type Duration, parseDuration } from '../core/duration.js';
export { oneLine } from '../core/text.js';
export { BodyAlreadyParsedError, BodyTooLargeError, OnceonlyError, VerificationError } from '../errors.js';
export type { Provider } from '../providers/types.js';
export { answerOf, outcomeBody, outcomeHeaders, toResponse } from './http.js';
export {
  createReceiver,
  type DeliveryResult,
  type Receiver,
  type ReceiverOptions,
} from './receiver.js';
