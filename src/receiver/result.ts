/**
 * What a delivery (or an inbox run) ended as: the outcome names and the result every part reports
 * (the receiver to `onOutcome`, the HTTP answer, telemetry). Types only, apart from the receiver and
 * the HTTP helpers so that neither imports the other's types back.
 */
import type { DegradedReason } from '../core/engine.js';
import type { InboxState } from '../core/inbox.js';

/** Every outcome of a delivery. */
export type Outcome =
  | 'processed'
  | 'duplicate'
  | 'in-flight'
  | 'failed'
  | 'lease-lost'
  | 'conflict'
  | 'store-unavailable'
  | 'unkeyed'
  | 'rejected'
  | 'too-large'
  | 'ignored'
  /** Inbox mode: written durably; a worker runs it (202 by default). */
  | 'accepted'
  /** Inbox mode: an entry that failed `maxAttempts` times or for longer than `maxAge`; kept. */
  | 'dead'
  /** A sender's verification handshake, answered before verification; store and handler untouched. */
  | 'handshake';

/** The result of one delivery, passed to `onOutcome` and returned by `receive()`. */
export interface DeliveryResult {
  readonly outcome: Outcome;
  /** The HTTP status the provider gets. */
  readonly status: number;
  /** Why the outcome is degraded (onceonly could not keep its full promise), if it is. */
  readonly degraded: DegradedReason | undefined;
  /** Stable code for rejected, too-large, store-unavailable and failed outcomes. */
  readonly code: string | undefined;
  readonly provider: string;
  /** The receiver's `name`: its key space (the provider's name unless set). */
  readonly receiver?: string | undefined;
  readonly key: string | undefined;
  readonly id: string | undefined;
  readonly type: string | undefined;
  readonly attempt: number | undefined;
  /** The error behind a rejected, failed or store-unavailable outcome (for your logs, never sent). */
  readonly error: unknown;
  /** The store error behind a degraded outcome (confirm, release or extend failed), when there is one. */
  readonly cause?: unknown;
  /** The handler's own response, when it returned one. */
  readonly response: Response | undefined;
  /** Seconds the provider is asked to wait before retrying (in-flight, store-unavailable). */
  readonly retryAfter: number | undefined;
  /** Wall time spent on the delivery, in ms. */
  readonly durationMs: number;
  /**
   * For a delivery carrying several events (SendGrid), each event's own result, in order (each was
   * also passed to `onOutcome`); the fields above then describe the batch as a whole.
   */
  readonly batch?: readonly DeliveryResult[] | undefined;
  /**
   * Inbox mode: where the entry stands after this delivery or run (`pending` with the time of its
   * next attempt after a failure, `processing` while a hybrid run goes on past the inline budget,
   * `completed`, `dead`), and the runs so far.
   */
  readonly inbox?:
    | {
        readonly state: InboxState;
        readonly attempts?: number | undefined;
        readonly nextAttemptAt?: Date | undefined;
      }
    | undefined;
}
