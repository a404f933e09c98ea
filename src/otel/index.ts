/**
 * `onceonly/otel`: OpenTelemetry metrics and spans for receivers, `once()` calls and inbox workers,
 * on `@opentelemetry/api` (an optional peer dependency: install it, and an SDK, to use this).
 *
 * @example
 * import { otel } from 'onceonly/otel';
 * const telemetry = otel(); // the global MeterProvider and TracerProvider
 * createReceiver({ provider, store, handler, telemetry });
 * await once(store, key, work, { telemetry });
 *
 * Every metric and span, with its attributes and what to alert on: docs/observability.md.
 */
import {
  type Meter,
  type MeterProvider,
  metrics,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import type { InboxStore } from '../core/inbox.js';
import type { Telemetry, TelemetryResult, TelemetryRun, TelemetryRunInfo } from '../core/telemetry.js';
import { InboxGauges } from './inbox.js';
import { OtelMetrics } from './metrics.js';
import { type Kit, OtelRun } from './run.js';

export type { Telemetry } from '../core/telemetry.js';
export { TRACE_HEADER } from '../core/telemetry.js';

export interface OtelOptions {
  /** Where the metrics go. @default the global MeterProvider (`metrics.getMeterProvider()`) */
  meterProvider?: MeterProvider;
  /** Where the spans go. @default the global TracerProvider (`trace.getTracerProvider()`) */
  tracerProvider?: TracerProvider;
}

/** Instrumentation scope name of every meter and tracer. */
export const SCOPE = 'onceonly';

/** Buckets of every duration histogram, in seconds: 1 ms to 30 s. */
export const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * Telemetry for `createReceiver({ telemetry })`, `once(..., { telemetry })` and inbox workers:
 * OpenTelemetry metrics (counters and histograms of outcomes, durations, store calls, lost leases,
 * conflicts, handlers in flight, inbox entries) and spans (one per delivery or run, a child per
 * phase). One `otel()` may serve every receiver of a process.
 */
export function otel(options: OtelOptions = {}): Telemetry {
  const meter: Meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE);
  const tracer: Tracer = (options.tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE);
  const seconds = { unit: 's', advice: { explicitBucketBoundaries: DURATION_BUCKETS } } as const;
  // The counters and histograms, then the inbox gauges (observed once an inbox is).
  const measured = new OtelMetrics(meter, seconds);
  const inboxes = new InboxGauges(meter);
  const kit: Kit = {
    tracer,
    handlerDuration: measured.handlerDuration,
    storeDuration: measured.storeDuration,
    outcomeEntry: (result) => measured.outcomeEntry(result),
  };
  function start(info: TelemetryRunInfo): TelemetryRun {
    return new OtelRun(kit, info, measured.shapeOf(info));
  }

  return {
    start,
    outcome(result: TelemetryResult, source: 'receiver' | 'once') {
      measured.outcome(result, source);
    },
    observeInbox(inbox: InboxStore, receiver: string) {
      inboxes.observe(inbox, receiver);
    },
  };
}
