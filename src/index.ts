export type { DegradedReason, WorkContext } from './core/engine.js';
export {
  checkHealth,
  type HealthCheck,
  type HealthOptions,
  type HealthReport,
  type StoreHealth,
} from './core/health.js';
export type {
  InboxAccepted,
  InboxAcceptInput,
  InboxAcceptOptions,
  InboxDelivery,
  InboxEntryView,
  InboxJob,
  InboxListOptions,
  InboxState,
  InboxStats,
  InboxStore,
  InboxTakeOptions,
} from './core/inbox.js';
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
} from './core/index.js';
export {
  idempotencyKeyOf,
  type Jsonified,
  STEP_NAME_MAX,
  STEP_RESULT_MAX_BYTES,
  STEPS_MAX_BYTES,
  type StepContext,
  StepError,
  type StepStore,
} from './core/steps.js';
export type {
  Telemetry,
  TelemetryPhase,
  TelemetryPhaseHandle,
  TelemetryResult,
  TelemetryRun,
  TelemetryRunInfo,
  TelemetryRunKind,
} from './core/telemetry.js';
export {
  BodyAlreadyParsedError,
  BodyTimeoutError,
  BodyTooLargeError,
  ConfigError,
  HandlerTimeoutError,
  LeaseLostError,
  type MisconfigurationCode,
  OnceonlyError,
  type RejectionCode,
  StoreFullError,
  StoreMisconfiguredError,
  StoreTimeoutError,
  StoreUnavailableError,
  VerificationError,
} from './errors.js';
export { type OnceOptions, type OnceResult, once } from './once.js';
export { type HmacOptions, hmac } from './providers/hmac.js';
export type {
  AuthenticatingProvider,
  BatchItem,
  DeliveryInput,
  HandshakeAnswer,
  HandshakeRequest,
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
  type HealthCheckOptions,
  type InboxOptions,
  type InboxWorker,
  type Logger,
  OUTCOME_HEADER,
  type Outcome,
  outcomeBody,
  outcomeHeaders,
  type RawBody,
  type ReceiveInput,
  type Receiver,
  type ReceiverOptions,
  toResponse,
  type WorkerOptions,
  warningFor,
} from './receiver/index.js';
export { type MemoryStoreOptions, memoryStore } from './stores/memory.js';
