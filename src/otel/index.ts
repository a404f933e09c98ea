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
  type Attributes,
  type Context,
  context,
  type Histogram,
  type Link,
  type Meter,
  type MeterProvider,
  metrics,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import type { InboxStats, InboxStore } from '../core/inbox.js';
import {
  type Telemetry,
  type TelemetryPhase,
  type TelemetryPhaseHandle,
  type TelemetryResult,
  type TelemetryRun,
  type TelemetryRunInfo,
  TRACE_HEADER,
} from '../core/telemetry.js';

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

/** The phases that are store calls (their latency is `onceonly.store.operation.duration`). */
const STORE_OPS: ReadonlySet<TelemetryPhase> = new Set(['accept', 'claim', 'extend', 'confirm', 'release']);
/** Outcomes whose span status is ERROR: the provider is made to retry, or the entry died. */
const ERROR_OUTCOMES: ReadonlySet<string> = new Set(['failed', 'store-unavailable', 'dead']);

/**
 * Telemetry for `createReceiver({ telemetry })`, `once(..., { telemetry })` and inbox workers:
 * OpenTelemetry metrics (counters and histograms of outcomes, durations, store calls, lost leases,
 * conflicts, handlers in flight, inbox entries) and spans (one per delivery or run, a child per
 * phase). One `otel()` may serve every receiver of a process.
 */
export function otel(options: OtelOptions = {}): Telemetry {
  const meter: Meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE);
  const tracer: Tracer = (options.tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE);
  const seconds = { unit: 's', advice: { explicitBucketBoundaries: DURATION_BUCKETS } };

  // Counts are kept here and read by the SDK at collection (observable instruments): a counter
  // bumped per delivery costs a Map look-up instead of the SDK's attribute hashing.
  const deliveries = tally(meter, 'onceonly.deliveries', 'counter', {
    description: 'Results a receiver reported: each delivery, each event of a batch, each inbox run',
    unit: '{delivery}',
  });
  const onceRuns = tally(meter, 'onceonly.once.runs', 'counter', {
    description: 'once() calls by outcome',
    unit: '{run}',
  });
  const leasesLost = tally(meter, 'onceonly.leases.lost', 'counter', {
    description: 'Leases found held by another owner when extending or confirming',
    unit: '{lease}',
  });
  const conflicts = tally(meter, 'onceonly.conflicts', 'counter', {
    description: 'Deliveries whose key was already seen with another fingerprint',
    unit: '{delivery}',
  });
  const active = tally(meter, 'onceonly.handlers.active', 'updown', {
    description: 'Handlers running now',
    unit: '{handler}',
  });
  const deliveryDuration = meter.createHistogram('onceonly.delivery.duration', {
    description: 'Time from a delivery (or run) starting to its outcome',
    ...seconds,
  });
  const handlerDuration = meter.createHistogram('onceonly.handler.duration', {
    description: 'Time the handler (or once() work) ran',
    ...seconds,
  });
  const storeDuration = meter.createHistogram('onceonly.store.operation.duration', {
    description: 'Latency of store calls by operation and store kind',
    ...seconds,
  });

  // Inbox gauges: every inbox observed, read once per collection.
  const inboxes = new Map<string, InboxStore>();
  const inboxEntries = meter.createObservableGauge('onceonly.inbox.entries', {
    description: "Entries in a receiver's inbox by state",
    unit: '{entry}',
  });
  const oldestDue = meter.createObservableGauge('onceonly.inbox.oldest_due.age', {
    description: 'Age of the oldest inbox entry that is due and not yet taken (0 when none)',
    unit: 's',
  });
  let observing = false;
  const observeAll = () => {
    if (observing) return;
    observing = true;
    meter.addBatchObservableCallback(
      async (result) => {
        const reads = [...inboxes].map(async ([receiver, inbox]) => {
          let stats: InboxStats;
          try {
            stats = await inbox.stats({ receiver });
          } catch {
            return; // the store is away: no point rather than a wrong one
          }
          for (const state of ['pending', 'processing', 'completed', 'dead'] as const) {
            result.observe(inboxEntries, stats[state], {
              'onceonly.receiver': receiver,
              'onceonly.inbox.state': state,
            });
          }
          result.observe(oldestDue, stats.oldestDueMs / 1000, { 'onceonly.receiver': receiver });
        });
        await Promise.all(reads);
      },
      [inboxEntries, oldestDue],
    );
  };

  /** Attribute sets, made once per distinct combination (they are few: bounded values only). */
  const attributeSets = new Map<string, Attributes>();
  function attributesOf(key: string, make: () => Attributes): Attributes {
    let attributes = attributeSets.get(key);
    if (attributes === undefined) {
      attributes = Object.freeze(make());
      attributeSets.set(key, attributes);
    }
    return attributes;
  }
  function whereOf(provider: string | undefined, receiver: string | undefined, extra: Attributes = {}) {
    const attributes: Attributes = { ...extra };
    if (provider !== undefined) attributes['onceonly.provider'] = provider;
    if (receiver !== undefined) attributes['onceonly.receiver'] = receiver;
    return attributes;
  }
  function resultAttributes(result: TelemetryResult): Attributes {
    return attributesOf(
      `r\0${result.outcome}\0${result.provider}\0${result.receiver}\0${result.degraded}\0${result.code}`,
      () => {
        const attributes = whereOf(result.provider, result.receiver, { 'onceonly.outcome': result.outcome });
        if (result.degraded !== undefined) attributes['onceonly.degraded'] = result.degraded;
        if (result.code !== undefined) attributes['onceonly.code'] = result.code;
        return attributes;
      },
    );
  }

  /**
   * What one result adds to the metrics (its attribute sets and counter points), found through
   * nested maps on the result's own values: no key string is built per delivery.
   */
  const outcomes: Nested<Nested<Nested<Nested<Map<unknown, OutcomeEntry>>>>> = new Map();
  function outcomeEntry(result: TelemetryResult): OutcomeEntry {
    const byCode = within(
      within(within(within(outcomes, result.outcome), result.provider), result.receiver),
      result.degraded,
    );
    let entry = byCode.get(result.code);
    if (entry === undefined) {
      const key = `${result.outcome}\0${result.provider}\0${result.receiver}\0${result.degraded}\0${result.code}`;
      const attributes = resultAttributes(result);
      entry = {
        attributes,
        delivery: deliveries.point(key, attributes),
        once: onceRuns.point(key, attributes),
        conflict:
          result.outcome === 'conflict'
            ? [
                conflicts.point(
                  `receiver\0${result.provider}\0${result.receiver}`,
                  attributesOf(`c\0${result.provider}\0${result.receiver}`, () =>
                    whereOf(result.provider, result.receiver),
                  ),
                ),
                conflicts.point(
                  `once\0${result.provider}\0${result.receiver}`,
                  attributesOf(`c\0${result.provider}\0${result.receiver}`, () =>
                    whereOf(result.provider, result.receiver),
                  ),
                ),
              ]
            : undefined,
        duration: attributesOf(`d\0${result.outcome}\0${result.provider}\0${result.receiver}`, () =>
          whereOf(result.provider, result.receiver, { 'onceonly.outcome': result.outcome }),
        ),
        error:
          ERROR_OUTCOMES.has(result.outcome) ||
          (result.outcome === 'rejected' && (result.status ?? 0) >= 500),
      };
      byCode.set(result.code, entry);
    }
    return entry;
  }

  const shapes = new WeakMap<TelemetryRunInfo, Shape>();
  function shapeOf(info: TelemetryRunInfo): Shape {
    let shape = shapes.get(info);
    if (shape !== undefined) return shape;
    const key = `${info.kind}\0${info.provider}\0${info.receiver}`;
    const run = attributesOf(`k\0${key}`, () =>
      whereOf(info.provider, info.receiver, { 'onceonly.run.kind': info.kind }),
    );
    const storeOps = {} as Record<TelemetryPhase, StoreOp>;
    for (const op of STORE_OPS) {
      storeOps[op] = {
        ok: storeAttributes(op, info.store, 'ok'),
        error: storeAttributes(op, info.store, 'error'),
        notHeld: storeAttributes(op, info.store, 'not-held'),
        lost:
          op === 'extend' || op === 'confirm'
            ? leasesLost.point(
                `${key}\0${op}`,
                attributesOf(`l\0${key}\0${op}`, () => ({ ...run, 'onceonly.store.operation': op })),
              )
            : undefined,
      };
    }
    shape = {
      run,
      span: attributesOf(`s\0${key}\0${info.store}`, () => ({ ...run, 'onceonly.store.kind': info.store })),
      handlerOk: attributesOf(`h\0${key}\0ok`, () => ({ ...run, 'onceonly.handler.result': 'ok' })),
      handlerError: attributesOf(`h\0${key}\0error`, () => ({ ...run, 'onceonly.handler.result': 'error' })),
      active: active.point(key, run),
      storeOps,
      spanName:
        info.kind === 'delivery'
          ? 'onceonly.delivery'
          : info.kind === 'inbox'
            ? 'onceonly.inbox.run'
            : 'onceonly.once',
      spanKind: info.kind === 'inbox' ? SpanKind.CONSUMER : SpanKind.INTERNAL,
    };
    shapes.set(info, shape);
    return shape;
  }
  function storeAttributes(op: TelemetryPhase, store: string, result: string): Attributes {
    return attributesOf(`o\0${op}\0${store}\0${result}`, () => ({
      'onceonly.store.operation': op,
      'onceonly.store.kind': store,
      'onceonly.store.result': result,
    }));
  }

  const kit: Kit = {
    tracer,
    handlerDuration,
    storeDuration,
    outcomeEntry,
  };
  function start(info: TelemetryRunInfo): TelemetryRun {
    return new OtelRun(kit, info, shapeOf(info));
  }

  return {
    start,
    outcome(result: TelemetryResult, source: 'receiver' | 'once') {
      const entry = outcomeEntry(result);
      if (source === 'once') entry.once.value++;
      else entry.delivery.value++;
      if (entry.conflict) entry.conflict[source === 'once' ? 1 : 0].value++;
      if (result.durationMs !== undefined) deliveryDuration.record(result.durationMs / 1000, entry.duration);
    },
    observeInbox(inbox: InboxStore, receiver: string) {
      inboxes.set(receiver, inbox);
      observeAll();
    },
  };
}

/**
 * A counter (or up-down counter) kept in this process and observed by the SDK at collection: its
 * points by a key the caller builds from the attribute values.
 */
function tally(
  meter: Meter,
  name: string,
  kind: 'counter' | 'updown',
  descriptor: { description: string; unit: string },
) {
  const points = new Map<string, { attributes: Attributes; value: number }>();
  const instrument =
    kind === 'counter'
      ? meter.createObservableCounter(name, descriptor)
      : meter.createObservableUpDownCounter(name, descriptor);
  instrument.addCallback((result) => {
    // A counter's points are made ahead of use (a lease-lost point per receiver): reported once bumped.
    for (const point of points.values()) {
      if (kind === 'updown' || point.value !== 0) result.observe(point.value, point.attributes);
    }
  });
  return {
    /** The point of one attribute set (made once, then bumped in place by its holder). */
    point(key: string, attributes: Attributes): Point {
      let point = points.get(key);
      if (point === undefined) {
        point = { attributes, value: 0 };
        points.set(key, point);
      }
      return point;
    },
  };
}

type Nested<V> = Map<unknown, V>;

/** The map under `key` in `map`, made when missing. */
function within<V extends Map<unknown, unknown>>(map: Map<unknown, V>, key: unknown): V {
  let inner = map.get(key);
  if (inner === undefined) {
    inner = new Map() as V;
    map.set(key, inner);
  }
  return inner;
}

/** A counter's point: its attribute set and its value, read by the SDK at collection. */
interface Point {
  readonly attributes: Attributes;
  value: number;
}

/** What a run needs of its otel(): the instruments and the attribute caches. */
interface Kit {
  readonly tracer: Tracer;
  readonly handlerDuration: Histogram;
  readonly storeDuration: Histogram;
  outcomeEntry(result: TelemetryResult): OutcomeEntry;
}

/** What one combination of outcome, provider, receiver, degraded reason and code adds, made once. */
interface OutcomeEntry {
  readonly attributes: Attributes;
  readonly delivery: Point;
  readonly once: Point;
  /** The conflicts point for a receiver's result [0] and a once() result [1], for a conflict. */
  readonly conflict: readonly [Point, Point] | undefined;
  readonly duration: Attributes;
  /** Whether the run's span ends in ERROR. */
  readonly error: boolean;
}

/** A store operation's attribute sets by result, and its lost-lease point (extend, confirm). */
interface StoreOp {
  readonly ok: Attributes;
  readonly error: Attributes;
  readonly notHeld: Attributes;
  readonly lost: Point | undefined;
}

/** What every run of one kind, provider, receiver and store shares: made once. */
interface Shape {
  readonly span: Attributes;
  readonly run: Attributes;
  readonly handlerOk: Attributes;
  readonly handlerError: Attributes;
  readonly active: Point;
  readonly storeOps: Readonly<Record<TelemetryPhase, StoreOp>>;
  readonly spanName: string;
  readonly spanKind: SpanKind;
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
class OtelRun implements TelemetryRun {
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
