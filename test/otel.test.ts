/**
 * `onceonly/otel` with the real OpenTelemetry SDK: a MeterProvider read by a MetricReader, a
 * BasicTracerProvider into an InMemorySpanExporter, and AsyncLocalStorage as the context manager.
 * Each outcome (processed, duplicate, rejected, conflict, failed, store-unavailable, degraded,
 * lease-lost, in inbox mode accepted and the worker's run) gives the documented points and spans,
 * and a span the handler starts has the delivery span as its parent.
 */
import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { context, type Tracer, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  type DataPoint,
  type Histogram,
  MeterProvider,
  type MetricData,
  MetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import {
  createReceiver,
  type DeliveryResult,
  hmac,
  memoryStore,
  once,
  type ReceiverOptions,
  type Store,
} from '../src/index.js';
import { otel } from '../src/otel/index.js';
import { wrapStore } from './support/wrap-store.js';

const contextManager = new AsyncLocalStorageContextManager().enable();
context.setGlobalContextManager(contextManager);
after(() => {
  context.disable();
});

const SECRET = 'otel-test-secret';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

class TestReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

/** A fresh SDK per test: metrics read on demand, spans kept in memory. */
function sdk() {
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const telemetry = otel({ meterProvider, tracerProvider });
  return {
    telemetry,
    tracer: tracerProvider.getTracer('app'),
    spans: () => exporter.getFinishedSpans(),
    async metrics(): Promise<Map<string, MetricData>> {
      const { resourceMetrics, errors } = await reader.collect();
      assert.deepEqual(errors, []);
      const out = new Map<string, MetricData>();
      for (const scope of resourceMetrics.scopeMetrics)
        for (const metric of scope.metrics) out.set(metric.descriptor.name, metric);
      return out;
    },
  };
}

/** The value of a counter's point with these attributes (0 when absent). */
function count(metrics: Map<string, MetricData>, name: string, attributes: Record<string, unknown>): number {
  const metric = metrics.get(name);
  if (!metric) return 0;
  let total = 0;
  for (const p of metric.dataPoints as DataPoint<number>[]) {
    if (Object.entries(attributes).every(([k, v]) => p.attributes[k] === v)) total += p.value;
  }
  return total;
}

/** Recorded values of a histogram whose points match these attributes. */
function observations(
  metrics: Map<string, MetricData>,
  name: string,
  attributes: Record<string, unknown> = {},
): number {
  const metric = metrics.get(name);
  if (!metric) return 0;
  let total = 0;
  for (const p of metric.dataPoints as DataPoint<Histogram>[]) {
    if (Object.entries(attributes).every(([k, v]) => p.attributes[k] === v)) total += p.value.count;
  }
  return total;
}

/** No metric point carries an event id or a key. */
function assertBounded(metrics: Map<string, MetricData>, id: string): void {
  for (const metric of metrics.values()) {
    for (const p of metric.dataPoints) {
      for (const value of Object.values(p.attributes)) {
        assert.ok(!String(value).includes(id), `${metric.descriptor.name} carries ${String(value)}`);
      }
    }
  }
}

function acme() {
  return hmac<{ id: string; type: string }>({
    name: 'acme',
    secret: SECRET,
    signatureHeader: 'x-acme-signature',
    signaturePrefix: 'sha256=',
    timestampHeader: 'x-acme-timestamp',
    id: (event) => event.id,
    type: (event) => event.type,
    typeSigned: true,
  });
}

function delivery(event: object, options: { badSignature?: boolean } = {}): Request {
  const body = JSON.stringify(event);
  const t = Math.floor(Date.now() / 1000);
  const sig = createHmac('sha256', options.badSignature ? 'wrong' : SECRET)
    .update(`${t}.${body}`)
    .digest('hex');
  return new Request('http://localhost/hooks', {
    method: 'POST',
    body,
    headers: { 'x-acme-signature': `sha256=${sig}`, 'x-acme-timestamp': String(t) },
  });
}

let n = 0;
function uniqueName(): string {
  return `otel-${randomBytes(3).toString('hex')}-${n++}`;
}

function receiverWith(
  telemetry: ReturnType<typeof otel>,
  overrides: Partial<ReceiverOptions<ReturnType<typeof acme>>> = {},
) {
  const results: DeliveryResult[] = [];
  const receiver = createReceiver({
    name: uniqueName(),
    provider: acme(),
    store: memoryStore(),
    handler: () => {},
    logger: false,
    telemetry,
    onOutcome: (r) => results.push(r),
    ...overrides,
  });
  return { receiver, results };
}

const byName = (spans: ReadableSpan[], name: string) => spans.filter((s) => s.name === name);
function childrenOf(spans: ReadableSpan[], parent: ReadableSpan): string[] {
  return spans
    .filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId)
    .map((s) => s.name)
    .sort();
}

describe('onceonly/otel with the real SDK', () => {
  it('processed then duplicate: counters, durations, store latency and a span per delivery with its phases', async () => {
    const o = sdk();
    const { receiver } = receiverWith(o.telemetry);
    const event = { id: `evt_${randomBytes(6).toString('hex')}`, type: 'invoice.paid' };
    assert.equal((await receiver.fetch(delivery(event))).status, 200);
    assert.equal((await receiver.fetch(delivery(event))).status, 200);

    const m = await o.metrics();
    assert.equal(
      count(m, 'onceonly.deliveries', { 'onceonly.outcome': 'processed', 'onceonly.provider': 'acme' }),
      1,
    );
    assert.equal(count(m, 'onceonly.deliveries', { 'onceonly.outcome': 'duplicate' }), 1);
    assert.equal(observations(m, 'onceonly.delivery.duration'), 2);
    assert.equal(observations(m, 'onceonly.handler.duration', { 'onceonly.handler.result': 'ok' }), 1);
    assert.equal(
      observations(m, 'onceonly.store.operation.duration', {
        'onceonly.store.operation': 'claim',
        'onceonly.store.kind': 'memory',
      }),
      2,
    );
    assert.equal(
      observations(m, 'onceonly.store.operation.duration', { 'onceonly.store.operation': 'confirm' }),
      1,
    );
    assert.equal(count(m, 'onceonly.handlers.active', {}), 0);
    assert.equal(m.get('onceonly.delivery.duration')?.descriptor.unit, 's');
    assertBounded(m, event.id);

    const spans = o.spans();
    const deliveries = byName(spans, 'onceonly.delivery');
    assert.equal(deliveries.length, 2);
    const [first, second] = deliveries;
    assert.deepEqual(childrenOf(spans, first!), [
      'onceonly.claim',
      'onceonly.confirm',
      'onceonly.handler',
      'onceonly.verify',
    ]);
    assert.equal(first!.attributes['onceonly.outcome'], 'processed');
    assert.equal(first!.attributes['onceonly.attempt'], 1);
    assert.equal(first!.attributes['onceonly.event.id'], event.id);
    assert.deepEqual(childrenOf(spans, second!), ['onceonly.claim', 'onceonly.verify']);
    assert.equal(second!.attributes['onceonly.outcome'], 'duplicate');
  });

  it('a span the handler starts has the delivery span as parent', async () => {
    const o = sdk();
    let tracer: Tracer | undefined;
    const { receiver } = receiverWith(o.telemetry, {
      handler: async () => {
        await sleep(1);
        tracer!.startActiveSpan('user.work', (span) => span.end());
      },
    });
    tracer = o.tracer;
    await receiver.fetch(delivery({ id: 'evt_nest', type: 'x' }));
    const spans = o.spans();
    const [user] = byName(spans, 'user.work');
    const [parent] = byName(spans, 'onceonly.delivery');
    assert.ok(user && parent);
    assert.equal(user.parentSpanContext?.spanId, parent.spanContext().spanId);
    assert.equal(user.spanContext().traceId, parent.spanContext().traceId);
  });

  it('the delivery span is a child of the span active when it arrived (an HTTP server span)', async () => {
    const o = sdk();
    const { receiver } = receiverWith(o.telemetry);
    await o.tracer.startActiveSpan('POST /hooks', async (server) => {
      await receiver.fetch(delivery({ id: 'evt_server', type: 'x' }));
      server.end();
    });
    const [server] = byName(o.spans(), 'POST /hooks');
    const [d] = byName(o.spans(), 'onceonly.delivery');
    assert.equal(d!.parentSpanContext?.spanId, server!.spanContext().spanId);
  });

  it('rejected: counted with its code, a verify span in error, the store untouched', async () => {
    const o = sdk();
    const { receiver } = receiverWith(o.telemetry);
    assert.equal(
      (await receiver.fetch(delivery({ id: 'evt_bad', type: 'x' }, { badSignature: true }))).status,
      401,
    );
    const m = await o.metrics();
    assert.equal(
      count(m, 'onceonly.deliveries', {
        'onceonly.outcome': 'rejected',
        'onceonly.code': 'invalid_signature',
      }),
      1,
    );
    assert.equal(observations(m, 'onceonly.store.operation.duration'), 0);
    const spans = o.spans();
    const [verify] = byName(spans, 'onceonly.verify');
    assert.equal(verify!.status.code, 2 /* ERROR */);
    assert.deepEqual(childrenOf(spans, byName(spans, 'onceonly.delivery')[0]!), ['onceonly.verify']);
  });

  it('conflict: the conflicts counter and a conflict outcome', async () => {
    const o = sdk();
    const { receiver } = receiverWith(o.telemetry);
    await receiver.fetch(delivery({ id: 'evt_c', type: 'x' }));
    assert.equal(
      (await receiver.fetch(delivery({ id: 'evt_c', type: 'x', other: 1 } as object))).status,
      422,
    );
    const m = await o.metrics();
    assert.equal(count(m, 'onceonly.conflicts', { 'onceonly.provider': 'acme' }), 1);
    assert.equal(
      count(m, 'onceonly.deliveries', {
        'onceonly.outcome': 'conflict',
        'onceonly.code': 'fingerprint_mismatch',
      }),
      1,
    );
    assert.equal(byName(o.spans(), 'onceonly.delivery')[1]!.attributes['onceonly.outcome'], 'conflict');
  });

  it('failed: handler error recorded on the handler span, release timed, delivery span in error', async () => {
    const o = sdk();
    const { receiver } = receiverWith(o.telemetry, {
      handler: () => {
        throw new Error('boom');
      },
    });
    assert.equal((await receiver.fetch(delivery({ id: 'evt_f', type: 'x' }))).status, 500);
    const m = await o.metrics();
    assert.equal(
      count(m, 'onceonly.deliveries', { 'onceonly.outcome': 'failed', 'onceonly.code': 'handler_failed' }),
      1,
    );
    assert.equal(observations(m, 'onceonly.handler.duration', { 'onceonly.handler.result': 'error' }), 1);
    assert.equal(
      observations(m, 'onceonly.store.operation.duration', { 'onceonly.store.operation': 'release' }),
      1,
    );
    const spans = o.spans();
    const [d] = byName(spans, 'onceonly.delivery');
    assert.equal(d!.status.code, 2);
    assert.deepEqual(childrenOf(spans, d!), [
      'onceonly.claim',
      'onceonly.handler',
      'onceonly.release',
      'onceonly.verify',
    ]);
    assert.equal(byName(spans, 'onceonly.handler')[0]!.events[0]?.name, 'exception');
  });

  it('store-unavailable (fail-closed 503) and degraded (fail-open) are counted apart', async () => {
    const o = sdk();
    let refusals = 0;
    const down = wrapStore(memoryStore(), () => {
      refusals++;
      throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    });
    const closed = receiverWith(o.telemetry, { store: down });
    assert.equal((await closed.receiver.fetch(delivery({ id: 'evt_s', type: 'x' }))).status, 503);
    const open = receiverWith(o.telemetry, { store: down, onStoreError: 'open' });
    assert.equal((await open.receiver.fetch(delivery({ id: 'evt_o', type: 'x' }))).status, 200);
    assert.equal(refusals, 2, 'the fault happened: both claims were refused');
    assert.equal(open.results[0]!.degraded, 'store-unavailable');

    const m = await o.metrics();
    assert.equal(count(m, 'onceonly.deliveries', { 'onceonly.outcome': 'store-unavailable' }), 1);
    assert.equal(
      count(m, 'onceonly.deliveries', {
        'onceonly.outcome': 'processed',
        'onceonly.degraded': 'store-unavailable',
      }),
      1,
    );
    assert.equal(
      observations(m, 'onceonly.store.operation.duration', {
        'onceonly.store.operation': 'claim',
        'onceonly.store.kind': 'custom',
        'onceonly.store.result': 'error',
      }),
      2,
    );
    const spans = byName(o.spans(), 'onceonly.delivery');
    assert.equal(spans[0]!.status.code, 2);
    assert.equal(spans[0]!.attributes['onceonly.status'], 503);
    assert.equal(spans[1]!.attributes['onceonly.degraded'], 'store-unavailable');
  });

  it('lease lost: a handler that outlives its lease while another delivery takes over', async () => {
    const o = sdk();
    const inner = memoryStore();
    let extendsRefused = 0;
    // A partition of the first owner's extends only: its lease runs out while it works.
    const store: Store = {
      ...wrapStore(inner, () => {}),
      extend: async () => {
        extendsRefused++;
        throw new Error('partitioned');
      },
    };
    let secondDone!: () => void;
    const second = new Promise<void>((resolve) => {
      secondDone = resolve;
    });
    let runs = 0;
    const { receiver, results } = receiverWith(o.telemetry, {
      store,
      lease: '300ms',
      timeout: '20s',
      storeTimeout: '100ms',
      handler: async () => {
        if (++runs === 1) await second;
      },
    });
    const event = { id: 'evt_lost', type: 'x' };
    const firstAnswer = receiver.fetch(delivery(event));
    // The second delivery gets in once the first lease ran out (in-flight until then).
    for (;;) {
      await sleep(100);
      const res = await receiver.fetch(delivery(event));
      if (res.status === 200) break;
    }
    secondDone();
    assert.equal((await firstAnswer).status, 200);
    assert.ok(extendsRefused > 0, 'the fault happened: extends were refused');
    assert.ok(results.some((r) => r.outcome === 'lease-lost'));

    const m = await o.metrics();
    assert.equal(count(m, 'onceonly.deliveries', { 'onceonly.outcome': 'lease-lost' }), 1);
    assert.equal(count(m, 'onceonly.leases.lost', { 'onceonly.store.operation': 'confirm' }), 1);
    assert.ok(
      observations(m, 'onceonly.store.operation.duration', {
        'onceonly.store.operation': 'extend',
        'onceonly.store.result': 'error',
      }) >= 1,
    );
    const lost = byName(o.spans(), 'onceonly.delivery').find(
      (s) => s.attributes['onceonly.outcome'] === 'lease-lost',
    );
    assert.ok(lost?.events.some((e) => e.name === 'onceonly.lease.lost'));
    const confirm = byName(o.spans(), 'onceonly.confirm').find(
      (s) => s.attributes['onceonly.lease.held'] === false,
    );
    assert.ok(confirm, 'the confirm span says the lease was not held');
  });

  it('lease lost found by the heartbeat: counted in onceonly.leases.lost for the extend', async () => {
    // Prepare: the first owner's extends fail (a partition) until a second delivery took over;
    // then its next heartbeat reaches the store and finds the lease held by the other owner.
    const o = sdk();
    const inner = memoryStore();
    let partitioned = true;
    const refusedHeld: boolean[] = [];
    const store: Store = {
      ...wrapStore(inner, () => {}),
      extend: async (lease, opts) => {
        if (partitioned) throw new Error('partitioned');
        const held = await inner.extend(lease, opts);
        if (!held) refusedHeld.push(held);
        return held;
      },
    };
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let runs = 0;
    const { receiver, results } = receiverWith(o.telemetry, {
      store,
      lease: '300ms',
      timeout: '20s',
      storeTimeout: '100ms',
      handler: async ({ signal }) => {
        if (++runs > 1) return;
        // The first run waits until its heartbeat says the lease is lost (or the test ends it).
        await Promise.race([gate, new Promise((resolve) => signal.addEventListener('abort', resolve))]);
      },
    });
    const event = { id: 'evt_beat_lost', type: 'x' };
    const first = receiver.fetch(delivery(event));
    for (;;) {
      await sleep(100);
      const res = await receiver.fetch(delivery(event));
      if (res.status === 200) break;
    }
    // Act: the partition ends; the first owner's next heartbeat reaches the store.
    partitioned = false;
    const deadline = Date.now() + 10_000;
    while (refusedHeld.length === 0 && Date.now() < deadline) await sleep(50);
    release();
    await first;
    // Assess: the fault happened (an extend found another owner), and it was counted.
    assert.equal(refusedHeld.length >= 1, true, 'a heartbeat found the lease held by another owner');
    assert.ok(results.length >= 2);
    const m = await o.metrics();
    assert.ok(count(m, 'onceonly.leases.lost', { 'onceonly.store.operation': 'extend' }) >= 1);
  });

  it('handlers in flight: the gauge counts a running handler', async () => {
    const o = sdk();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const { receiver } = receiverWith(o.telemetry, {
      handler: async () => {
        started();
        await gate;
      },
    });
    const answer = receiver.fetch(delivery({ id: 'evt_active', type: 'x' }));
    await running;
    assert.equal(count(await o.metrics(), 'onceonly.handlers.active', {}), 1);
    release();
    await answer;
    assert.equal(count(await o.metrics(), 'onceonly.handlers.active', {}), 0);
  });

  it('once(): a run span with claim, handler and confirm, counted by outcome, nested in the active span', async () => {
    const o = sdk();
    const store = memoryStore();
    const key = `order-${randomBytes(4).toString('hex')}`;
    await o.tracer.startActiveSpan('consume', async (consume) => {
      await once(store, key, () => o.tracer.startActiveSpan('charge', (s) => s.end()), {
        telemetry: o.telemetry,
      });
      await once(store, key, () => {}, { telemetry: o.telemetry });
      consume.end();
    });
    const m = await o.metrics();
    assert.equal(count(m, 'onceonly.once.runs', { 'onceonly.outcome': 'processed' }), 1);
    assert.equal(count(m, 'onceonly.once.runs', { 'onceonly.outcome': 'duplicate' }), 1);
    assertBounded(m, key);
    const spans = o.spans();
    const runs = byName(spans, 'onceonly.once');
    assert.equal(runs.length, 2);
    const [consume] = byName(spans, 'consume');
    assert.equal(runs[0]!.parentSpanContext?.spanId, consume!.spanContext().spanId);
    assert.deepEqual(childrenOf(spans, runs[0]!), [
      'charge',
      'onceonly.claim',
      'onceonly.confirm',
      'onceonly.handler',
    ]);
  });

  it('inbox: accepted delivery, worker run linked to it, entries by state and oldest due age', async () => {
    const o = sdk();
    const store = memoryStore();
    const { receiver } = receiverWith(o.telemetry, { store, inbox: true });
    assert.equal((await receiver.fetch(delivery({ id: 'evt_in', type: 'x' }))).status, 202);
    let m = await o.metrics();
    assert.equal(count(m, 'onceonly.inbox.entries', { 'onceonly.inbox.state': 'pending' }), 1);
    assert.ok(m.has('onceonly.inbox.oldest_due.age'));
    assert.equal(receiver ? await receiver.runDue() : 0, 1);
    m = await o.metrics();
    assert.equal(count(m, 'onceonly.deliveries', { 'onceonly.outcome': 'accepted' }), 1);
    assert.equal(count(m, 'onceonly.deliveries', { 'onceonly.outcome': 'processed' }), 1);
    assert.equal(count(m, 'onceonly.inbox.entries', { 'onceonly.inbox.state': 'pending' }), 0);
    assert.equal(count(m, 'onceonly.inbox.entries', { 'onceonly.inbox.state': 'completed' }), 1);
    const spans = o.spans();
    const [accepting] = byName(spans, 'onceonly.delivery');
    const [run] = byName(spans, 'onceonly.inbox.run');
    assert.deepEqual(childrenOf(spans, accepting!), ['onceonly.accept', 'onceonly.verify']);
    assert.deepEqual(childrenOf(spans, run!), ['onceonly.confirm', 'onceonly.handler']);
    assert.equal(run!.links[0]?.context.spanId, accepting!.spanContext().spanId);
    assert.equal(run!.links[0]?.context.traceId, accepting!.spanContext().traceId);
  });

  it('without telemetry nothing is recorded (and the global API stays a no-op)', async () => {
    const o = sdk();
    const { receiver } = receiverWith(undefined as never, { telemetry: undefined });
    await receiver.fetch(delivery({ id: 'evt_none', type: 'x' }));
    assert.equal((await o.metrics()).size, 0);
    assert.equal(o.spans().length, 0);
    assert.equal(trace.getActiveSpan(), undefined);
  });
});
