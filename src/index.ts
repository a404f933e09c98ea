export {
  BodyAlreadyParsedError,
  BodyTimeoutError,
  BodyTooLargeError,
  ConfigError,
  HandlerTimeoutError,
  LeaseLostError,
  OnceonlyError,
  type RejectionCode,
  StoreFullError,
  StoreUnavailableError,
  VerificationError,
} from './errors.js';
export type { DegradedReason, WorkContext } from './lease/engine.js';
export {
  type Claim,
  type ClaimOptions,
  createLease,
  type Duration,
  type Lease,
  parseDuration,
  type RecordOptions,
  type RecordView,
  type Store,
} from './lease/index.js';
export { type OnceOptions, type OnceResult, once } from './once.js';
export { type HmacOptions, hmac } from './providers/hmac.js';
export type {
  AuthenticatingProvider,
  BatchItem,
  DeliveryInput,
  Provider,
  Verified,
} from './providers/types.js';
export {
  ATTEMPT_HEADER,
  createReceiver,
  DEGRADED_HEADER,
  type DeliveryResult,
  type Handler,
  type HandlerContext,
  type HeadersInput,
  OUTCOME_HEADER,
  type Outcome,
  outcomeBody,
  outcomeHeaders,
  type RawBody,
  type ReceiveInput,
  type Receiver,
  type ReceiverOptions,
  toResponse,
  warningFor,
} from './receiver/index.js';
export { type MemoryStoreOptions, memoryStore } from './stores/memory.js';
