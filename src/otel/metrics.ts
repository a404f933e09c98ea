/**
 * The metrics of one otel(): its counters and histograms, and the attribute sets results and runs
 * record them with, each made once per distinct combination (they are few: bounded values only).
 */
import { type Attributes, type Histogram, type Meter, SpanKind } from '@opentelemetry/api';
import type { TelemetryPhase, TelemetryResult, TelemetryRunInfo } from '../core/telemetry.js';
import { type Nested, type Point, type Tally, tally, within } from './points.js';

/** The phases that are store calls (their latency is `onceonly.store.operation.duration`). */
const STORE_OPS: ReadonlySet<TelemetryPhase> = new Set(['accept', 'claim', 'extend', 'confirm', 'release']);
/** Outcomes whose span status is ERROR: the provider is made to retry, or the entry died. */
const ERROR_OUTCOMES: ReadonlySet<string> = new Set(['failed', 'store-unavailable', 'dead']);

/** What one combination of outcome, provider, receiver, degraded reason and code adds, made once. */
export interface OutcomeEntry {
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
export interface StoreOp {
  readonly ok: Attributes;
  readonly error: Attributes;
  readonly notHeld: Attributes;
  readonly lost: Point | undefined;
}

/** What every run of one kind, provider, receiver and store shares: made once. */
export interface Shape {
  readonly span: Attributes;
  readonly run: Attributes;
  readonly handlerOk: Attributes;
  readonly handlerError: Attributes;
  readonly active: Point;
  readonly storeOps: Readonly<Record<TelemetryPhase, StoreOp>>;
  readonly spanName: string;
  readonly spanKind: SpanKind;
}

/** The histograms' options: unit and buckets of every duration, in seconds. */
export interface Seconds {
  readonly unit: 's';
  readonly advice: { readonly explicitBucketBoundaries: number[] };
}

/** The instruments of one meter, and the attribute sets and points of results and runs. */
export class OtelMetrics {
  // Counts are kept here and read by the SDK at collection (observable instruments): a counter
  // bumped per delivery costs a Map look-up instead of the SDK's attribute hashing.
  private readonly deliveries: Tally;
  private readonly onceRuns: Tally;
  private readonly leasesLost: Tally;
  private readonly conflicts: Tally;
  private readonly active: Tally;
  readonly deliveryDuration: Histogram;
  readonly handlerDuration: Histogram;
  readonly storeDuration: Histogram;

  /** Attribute sets, made once per distinct combination (they are few: bounded values only). */
  private readonly attributeSets = new Map<string, Attributes>();
  /**
   * What one result adds to the metrics (its attribute sets and counter points), found through
   * nested maps on the result's own values: no key string is built per delivery.
   */
  private readonly outcomes: Nested<Nested<Nested<Nested<Map<unknown, OutcomeEntry>>>>> = new Map();
  private readonly shapes = new WeakMap<TelemetryRunInfo, Shape>();

  constructor(meter: Meter, seconds: Seconds) {
    this.deliveries = tally(meter, 'onceonly.deliveries', 'counter', {
      description: 'Results a receiver reported: each delivery, each event of a batch, each inbox run',
      unit: '{delivery}',
    });
    this.onceRuns = tally(meter, 'onceonly.once.runs', 'counter', {
      description: 'once() calls by outcome',
      unit: '{run}',
    });
    this.leasesLost = tally(meter, 'onceonly.leases.lost', 'counter', {
      description: 'Leases found held by another owner when extending or confirming',
      unit: '{lease}',
    });
    this.conflicts = tally(meter, 'onceonly.conflicts', 'counter', {
      description: 'Deliveries whose key was already seen with another fingerprint',
      unit: '{delivery}',
    });
    this.active = tally(meter, 'onceonly.handlers.active', 'updown', {
      description: 'Handlers running now',
      unit: '{handler}',
    });
    this.deliveryDuration = meter.createHistogram('onceonly.delivery.duration', {
      description: 'Time from a delivery (or run) starting to its outcome',
      ...seconds,
    });
    this.handlerDuration = meter.createHistogram('onceonly.handler.duration', {
      description: 'Time the handler (or once() work) ran',
      ...seconds,
    });
    this.storeDuration = meter.createHistogram('onceonly.store.operation.duration', {
      description: 'Latency of store calls by operation and store kind',
      ...seconds,
    });
  }

  /** A result reported by a receiver (each delivery, event of a batch, inbox run) or by once(). */
  outcome(result: TelemetryResult, source: 'receiver' | 'once'): void {
    const entry = this.outcomeEntry(result);
    if (source === 'once') entry.once.value++;
    else entry.delivery.value++;
    if (entry.conflict) entry.conflict[source === 'once' ? 1 : 0].value++;
    if (result.durationMs !== undefined)
      this.deliveryDuration.record(result.durationMs / 1000, entry.duration);
  }

  private attributesOf(key: string, make: () => Attributes): Attributes {
    let attributes = this.attributeSets.get(key);
    if (attributes === undefined) {
      attributes = Object.freeze(make());
      this.attributeSets.set(key, attributes);
    }
    return attributes;
  }

  private resultAttributes(result: TelemetryResult): Attributes {
    return this.attributesOf(
      `r\0${result.outcome}\0${result.provider}\0${result.receiver}\0${result.degraded}\0${result.code}`,
      () => {
        const attributes = whereOf(result.provider, result.receiver, { 'onceonly.outcome': result.outcome });
        if (result.degraded !== undefined) attributes['onceonly.degraded'] = result.degraded;
        if (result.code !== undefined) attributes['onceonly.code'] = result.code;
        return attributes;
      },
    );
  }

  /** What one result adds to the metrics, made the first time its combination is seen. */
  outcomeEntry(result: TelemetryResult): OutcomeEntry {
    const byCode = within(
      within(within(within(this.outcomes, result.outcome), result.provider), result.receiver),
      result.degraded,
    );
    let entry = byCode.get(result.code);
    if (entry === undefined) {
      entry = this.makeOutcomeEntry(result);
      byCode.set(result.code, entry);
    }
    return entry;
  }

  private makeOutcomeEntry(result: TelemetryResult): OutcomeEntry {
    const key = `${result.outcome}\0${result.provider}\0${result.receiver}\0${result.degraded}\0${result.code}`;
    const attributes = this.resultAttributes(result);
    return {
      attributes,
      delivery: this.deliveries.point(key, attributes),
      once: this.onceRuns.point(key, attributes),
      conflict:
        result.outcome === 'conflict'
          ? [
              this.conflicts.point(
                `receiver\0${result.provider}\0${result.receiver}`,
                this.attributesOf(`c\0${result.provider}\0${result.receiver}`, () =>
                  whereOf(result.provider, result.receiver),
                ),
              ),
              this.conflicts.point(
                `once\0${result.provider}\0${result.receiver}`,
                this.attributesOf(`c\0${result.provider}\0${result.receiver}`, () =>
                  whereOf(result.provider, result.receiver),
                ),
              ),
            ]
          : undefined,
      duration: this.attributesOf(`d\0${result.outcome}\0${result.provider}\0${result.receiver}`, () =>
        whereOf(result.provider, result.receiver, { 'onceonly.outcome': result.outcome }),
      ),
      error:
        ERROR_OUTCOMES.has(result.outcome) || (result.outcome === 'rejected' && (result.status ?? 0) >= 500),
    };
  }

  /** What every run of this kind, provider, receiver and store shares, made once per run info. */
  shapeOf(info: TelemetryRunInfo): Shape {
    let shape = this.shapes.get(info);
    if (shape !== undefined) return shape;
    const key = `${info.kind}\0${info.provider}\0${info.receiver}`;
    const run = this.attributesOf(`k\0${key}`, () =>
      whereOf(info.provider, info.receiver, { 'onceonly.run.kind': info.kind }),
    );
    const storeOps = {} as Record<TelemetryPhase, StoreOp>;
    for (const op of STORE_OPS) {
      storeOps[op] = {
        ok: this.storeAttributes(op, info.store, 'ok'),
        error: this.storeAttributes(op, info.store, 'error'),
        notHeld: this.storeAttributes(op, info.store, 'not-held'),
        lost:
          op === 'extend' || op === 'confirm'
            ? this.leasesLost.point(
                `${key}\0${op}`,
                this.attributesOf(`l\0${key}\0${op}`, () => ({ ...run, 'onceonly.store.operation': op })),
              )
            : undefined,
      };
    }
    shape = {
      run,
      span: this.attributesOf(`s\0${key}\0${info.store}`, () => ({
        ...run,
        'onceonly.store.kind': info.store,
      })),
      handlerOk: this.attributesOf(`h\0${key}\0ok`, () => ({ ...run, 'onceonly.handler.result': 'ok' })),
      handlerError: this.attributesOf(`h\0${key}\0error`, () => ({
        ...run,
        'onceonly.handler.result': 'error',
      })),
      active: this.active.point(key, run),
      storeOps,
      spanName:
        info.kind === 'delivery'
          ? 'onceonly.delivery'
          : info.kind === 'inbox'
            ? 'onceonly.inbox.run'
            : 'onceonly.once',
      spanKind: info.kind === 'inbox' ? SpanKind.CONSUMER : SpanKind.INTERNAL,
    };
    this.shapes.set(info, shape);
    return shape;
  }

  private storeAttributes(op: TelemetryPhase, store: string, result: string): Attributes {
    return this.attributesOf(`o\0${op}\0${store}\0${result}`, () => ({
      'onceonly.store.operation': op,
      'onceonly.store.kind': store,
      'onceonly.store.result': result,
    }));
  }
}

function whereOf(provider: string | undefined, receiver: string | undefined, extra: Attributes = {}) {
  const attributes: Attributes = { ...extra };
  if (provider !== undefined) attributes['onceonly.provider'] = provider;
  if (receiver !== undefined) attributes['onceonly.receiver'] = receiver;
  return attributes;
}
