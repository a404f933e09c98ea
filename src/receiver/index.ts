export { type BodySource, type HeadersInput, type RawBody, readBody, readBounded } from './body.js';
export {
  ATTEMPT_HEADER,
  DEGRADED_HEADER,
  OUTCOME_HEADER,
  type Outcome,
  outcomeBody,
  outcomeHeaders,
  toResponse,
} from './http.js';
export type { InboxOptions } from './inbox.js';
export {
  createReceiver,
  type DeliveryResult,
  type Handler,
  type HandlerContext,
  type HealthCheckOptions,
  type Logger,
  type ReceiveInput,
  type Receiver,
  type ReceiverOptions,
  warningFor,
} from './receiver.js';
export type { InboxWorker, WorkerOptions } from './worker-loop.js';
