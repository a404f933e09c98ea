/**
 * A run of otel(): its span (with the context its handler runs in), a child span per phase, the
 * handler's and store calls' durations, and lost leases; and the link to the accepting delivery.
 */
import {
  type Context,
  context,
  type Histogram,
  type Link,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import {
  type TelemetryPhase,
  type TelemetryPhaseHandle,
  type TelemetryResult,
  type TelemetryRun,
  type TelemetryRunInfo,
  TRACE_HEADER,
} from '../core/telemetry.js';
import type { OutcomeEntry, Shape } from './metrics.js';

/** What a run needs of its otel(): the instruments and the attribute caches. */
export interface Kit {
  readonly tracer: Tracer;
  readonly handlerDuration: Histogram;
  readonly storeDuration: Histogram;
  outcomeEntry(result: TelemetryResult): OutcomeEntry;
}

const PHASE_SPAN_NAMES: Readonly<Record<TelemetryPhase, string>> = {
  verify: 'onceonly.verify',
  accept: 'onceonly.accept',
  claim: 'onceonly.claim',
  handler: 'onceonly.handler',
  extend: 'onceonly.extend',
  confirm: 'onceonly.confirm',
  release: 'onceonly.release',
};
const INTERNAL = { kind: SpanKind.INTERNAL } as const;

/** One run: its span (with the context its handler runs in) and its phases. */
export class OtelRun implements TelemetryRun {
  readonly span: Span;
  readonly recording: boolean;
  /** The context the run's work and child spans run in; undefined when it is the caller's own. */
  readonly inside: Context | undefined;
  private ended = false;

  constructor(
    readonly kit: Kit,
    info: TelemetryRunInfo,
    readonly shape: Shape,
  ) {
    const parent = context.active();
    this.span = kit.tracer.startSpan(
      shape.spanName,
      {
        kind: shape.spanKind,
        attributes: shape.span,
        links: info.headers ? linksFrom(info.headers) : undefined,
      },
      parent,
    );
    // A span that is not recorded (no tracer provider, or not sampled) gets no children either.
    this.recording = this.span.isRecording();
    // No context to enter for a span that carries nothing (the no-op tracer with no parent): the
    // work then runs in the caller's context, as it would have anyway. A sampled-out span with a
    // valid context is still entered, so the handler's own spans follow its sampling decision.
    this.inside =
      this.recording || trace.isSpanContextValid(this.span.spanContext())
        ? trace.setSpan(parent, this.span)
        : undefined;
  }

  phase(name: TelemetryPhase): TelemetryPhaseHandle {
    return new OtelPhase(this, name);
  }

  wrap<T>(fn: () => T): T {
    return this.inside === undefined ? fn() : context.with(this.inside, fn);
  }

  carrier(): readonly [string, string] | undefined {
    const sc = this.span.spanContext();
    if (!trace.isSpanContextValid(sc)) return undefined;
    return [
      TRACE_HEADER,
      `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 1).toString(16).padStart(2, '0')}`,
    ];
  }

  end(result: TelemetryResult): void {
    if (this.ended) return;
    this.ended = true;
    const span = this.span;
    if (this.recording) {
      const entry = this.kit.outcomeEntry(result);
      span.setAttributes(entry.attributes);
      if (result.status !== undefined) span.setAttribute('onceonly.status', result.status);
      if (result.attempt !== undefined) span.setAttribute('onceonly.attempt', result.attempt);
      // Spans may name the event (they are sampled, not aggregated); metrics never do.
      if (result.id !== undefined) span.setAttribute('onceonly.event.id', result.id);
      if (result.type !== undefined) span.setAttribute('onceonly.event.type', result.type);
      if (entry.error) {
        if (result.error !== undefined) span.recordException(asException(result.error));
        span.setStatus({ code: SpanStatusCode.ERROR, message: result.code ?? result.outcome });
      }
    }
    span.end();
  }
}

/** One phase of a run: timed, a child span when the run is recorded, store latency and lost leases. */
class OtelPhase implements TelemetryPhaseHandle {
  private readonly began: number;
  private readonly child: Span | undefined;
  private done = false;

  constructor(
    private readonly run: OtelRun,
    private readonly name: TelemetryPhase,
  ) {
    // Extend beats only count (one per lease third): no span of their own.
    this.child =
      run.recording && name !== 'extend'
        ? run.kit.tracer.startSpan(PHASE_SPAN_NAMES[name], INTERNAL, run.inside)
        : undefined;
    if (name === 'handler') run.shape.active.value++;
    this.began = performance.now();
  }

  end(error?: unknown, held?: boolean): void {
    if (this.done) return;
    const took = (performance.now() - this.began) / 1000;
    this.done = true;
    const { kit, shape } = this.run;
    const name = this.name;
    const failed = error !== undefined;
    if (name === 'handler') {
      shape.active.value--;
      kit.handlerDuration.record(took, failed ? shape.handlerError : shape.handlerOk);
    } else if (name !== 'verify') {
      const op = shape.storeOps[name];
      kit.storeDuration.record(took, failed ? op.error : held === false ? op.notHeld : op.ok);
      if (held === false && op.lost !== undefined) {
        op.lost.value++;
        if (this.run.recording)
          this.run.span.addEvent('onceonly.lease.lost', { 'onceonly.store.operation': name });
      }
    }
    const child = this.child;
    if (child) {
      if (held !== undefined) child.setAttribute('onceonly.lease.held', held);
      if (failed) {
        child.recordException(asException(error));
        child.setStatus({ code: SpanStatusCode.ERROR, message: messageOf(error) });
      }
      child.end();
    }
  }
}

/** The link to the accepting delivery, from the header the inbox kept with the entry. */
function linksFrom(headers: readonly (readonly [string, string])[] | undefined): Link[] | undefined {
  if (!headers) return undefined;
  for (const [name, value] of headers) {
    if (name !== TRACE_HEADER) continue;
    const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(value);
    if (!m) return undefined;
    const spanContext = {
      traceId: m[1]!,
      spanId: m[2]!,
      traceFlags: Number.parseInt(m[3]!, 16),
      isRemote: true,
    };
    if (!trace.isSpanContextValid(spanContext)) return undefined;
    return [{ context: spanContext, attributes: { 'onceonly.link': 'accepted-by' } }];
  }
  return undefined;
}

function asException(error: unknown): Error | string {
  return error instanceof Error ? error : String(error);
}

function messageOf(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.length > 300 ? `${text.slice(0, 297)}...` : text;
}
