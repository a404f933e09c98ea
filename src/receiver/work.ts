/**
 * The records the receiver's stages pass along: a delivery as it arrived (`Arrival`, which is also
 * what the inbox keeps of it), and one event keyed for its run (`Keyed`).
 */
import type { TelemetryRun } from '../core/telemetry.js';
import type { HeaderReader } from '../providers/types.js';
import type { Handler, HandlerContext } from './types.js';

/** A delivery as it arrived: read, not yet verified. */
export interface Arrival {
  readonly bytes: Uint8Array;
  readonly headers: HeaderReader;
  /** The full URL the provider called, when known. */
  readonly url: string | undefined;
  readonly receivedAt: Date;
  /** The HTTP method, upper case. */
  readonly method: string;
  /** When the receiver started on it (`Date.now()`): each result's `durationMs` counts from here. */
  readonly started: number;
  /** Its telemetry run, when telemetry is on. */
  readonly run?: TelemetryRun | undefined;
  /** A shorter deadline for its handler than the receiver's `timeout` (`receive()`'s `timeout`). */
  readonly timeoutMs?: number | undefined;
}

/** One event to run: what the handler sees, and what it is deduplicated on. */
export interface Keyed {
  readonly event: unknown;
  readonly type: string | undefined;
  readonly id: string | undefined;
  /** `undefined`: run without dedup (unkeyed). */
  readonly key: string | undefined;
  readonly fingerprint: string;
  /** A conflict of this event can only be its body seen under another (unsigned) type. */
  readonly typeOnly?: boolean | undefined;
  /** The telemetry run it belongs to, when telemetry is on. */
  readonly run?: TelemetryRun | undefined;
  /** A shorter deadline for its handler than the receiver's `timeout` (from its {@link Arrival}). */
  readonly timeoutMs?: number | undefined;
}

/** A keyed event with the handler that runs it. */
export interface Runnable extends Keyed {
  readonly handler: Handler<unknown>;
}

/** The raw delivery a handler sees. */
export type RawDelivery = HandlerContext<unknown>['delivery'];

/** Whether a value is a promise (a stage may answer at once or later): the engine's test. */
export { isThenable as isPromise } from '../core/engine.js';
