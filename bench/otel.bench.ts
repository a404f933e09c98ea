/**
 * The cost of telemetry: `receiver.receive()` of 2 KiB Stripe-signed events with the memory store,
 * every event delivered twice, by receivers that differ only in `telemetry`:
 *   off      no telemetry option (the path every user without it takes)
 *   metrics  otel() on an SDK MeterProvider (a reader that never exports) and no TracerProvider set
 *   traces   otel() on a BasicTracerProvider as `full` below, and no MeterProvider set
 *   full     otel() with metrics and traces: BasicTracerProvider, AlwaysOn sampling, every span
 *            handed to a BatchSpanProcessor (the production one) whose exporter drops it
 *   sampled  the same with 10% of traces sampled (ParentBased(TraceIdRatio 0.1))
 * and, when BENCH_BASELINE_DIST names another build's dist/ (the commit before telemetry), that
 * build's receiver as `before`, so the disabled path is compared with the code without the hook.
 * Rounds rotate the contenders on fresh events; figures are medians of per-round ratios to `off`,
 * by wall time and by the process's CPU time (user + system, `process.cpuUsage()`): on a shared,
 * loaded machine the CPU-time ratio is the steadier one (a round's wall time also counts the time
 * the process waited for a core).
 *
 * Run with: npm run bench -- otel      (BENCH_SMALL=1 for a quick run; BENCH_CONTENDERS=before,off
 * for the disabled path alone, with BENCH_BASELINE_DIST=<the baseline's dist>)
 * Target (issue 14): full telemetry at least 0.9x of off.
 */
import { createHmac } from 'node:crypto';
import { context, SpanKind, trace } from '@opentelemetry/api';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  type ReadableSpan,
  type SpanExporter,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import { createReceiver, memoryStore } from '../dist/index.js';
import { otel } from '../dist/otel/index.js';
import { stripe } from '../dist/providers/index.js';
import { median } from './support/stats.js';

const small = Boolean(process.env.BENCH_SMALL);
const ROUNDS = small ? 5 : 15;
const PER_ROUND = small ? 2_000 : 5_000;
const secret = 'whsec_bench0123456789abcdefghijklmnop';
const padding = 'x'.repeat(1_700);
let n = 0;
function event(): { body: Buffer; header: string } {
  const id = `evt_${(n++).toString(36).padStart(20, '0')}`;
  const body = Buffer.from(
    JSON.stringify({
      id,
      object: 'event',
      type: 'invoice.paid',
      created: 1_764_000_000,
      data: { object: { id: `in_${id}`, object: 'invoice', amount_paid: 2_000, padding } },
    }),
  );
  const t = Math.floor(Date.now() / 1000);
  const v1 = createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
  return { body, header: `t=${t},v1=${v1}` };
}

class IdleReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}
class DropExporter implements SpanExporter {
  exported = 0;
  export(spans: ReadableSpan[], done: Parameters<SpanExporter['export']>[1]): void {
    this.exported += spans.length;
    done({ code: 0 /* SUCCESS */ });
  }
  async shutdown(): Promise<void> {}
}

let effects = 0;
const handler = () => {
  effects++;
};
type Receive = (input: { rawBody: Buffer; headers: Record<string, string> }) => Promise<unknown>;
function receiverOf(make: typeof createReceiver, telemetry?: ReturnType<typeof otel>, name = 'off'): Receive {
  const receiver = make({
    name,
    provider: stripe({ secret }),
    store: memoryStore({ maxEntries: 10_000_000 }),
    handler,
    logger: false,
    ...(telemetry ? { telemetry } : {}),
  });
  return (input) => receiver.receive(input);
}

const metricsReader = new IdleReader();
const metricsOnly = otel({ meterProvider: new MeterProvider({ readers: [metricsReader] }) });
const dropped = new DropExporter();
const full = otel({
  meterProvider: new MeterProvider({ readers: [new IdleReader()] }),
  tracerProvider: new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropped)] }),
});
const tracesOnly = otel({
  tracerProvider: new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropped)] }),
});
const sampled = otel({
  meterProvider: new MeterProvider({ readers: [new IdleReader()] }),
  tracerProvider: new BasicTracerProvider({
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0.1) }),
    spanProcessors: [new BatchSpanProcessor(dropped)],
  }),
});

const contenders: [string, Receive][] = [
  ['off', receiverOf(createReceiver)],
  ['metrics', receiverOf(createReceiver, metricsOnly, 'metrics')],
  ['traces', receiverOf(createReceiver, tracesOnly, 'traces')],
  ['full', receiverOf(createReceiver, full, 'full')],
  ['sampled', receiverOf(createReceiver, sampled, 'sampled')],
];
if (process.env.BENCH_BASELINE_DIST) {
  const before = (await import(`${process.env.BENCH_BASELINE_DIST}/index.js`)) as {
    createReceiver: typeof createReceiver;
  };
  contenders.unshift(['before', receiverOf(before.createReceiver, undefined, 'before')]);
}

/** Deliveries per second of wall time and per second of CPU time. */
async function run(batch: ReturnType<typeof event>[], receive: Receive): Promise<[number, number]> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (const e of batch) {
    const input = {
      rawBody: e.body,
      headers: { 'stripe-signature': e.header, 'content-type': 'application/json' },
    };
    await receive(input);
    await receive(input);
  }
  const wall = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  return [(batch.length * 2) / wall, (batch.length * 2) / ((used.user + used.system) / 1e6)];
}

// BENCH_CONTENDERS=before,off runs only those (the disabled path against the build without the hook).
if (process.env.BENCH_CONTENDERS) {
  const only = new Set(process.env.BENCH_CONTENDERS.split(','));
  for (let i = contenders.length - 1; i >= 0; i--) if (!only.has(contenders[i]![0])) contenders.splice(i, 1);
}

for (const [, receive] of contenders) await run(Array.from({ length: 2_000 }, event), receive);

const rates = new Map<string, number[]>(contenders.map(([name]) => [name, []]));
const ratios = new Map<string, number[]>(contenders.map(([name]) => [name, []]));
const cpuRates = new Map<string, number[]>(contenders.map(([name]) => [name, []]));
const cpuRatios = new Map<string, number[]>(contenders.map(([name]) => [name, []]));
for (let r = 0; r < ROUNDS; r++) {
  const order = contenders.map((_, i) => contenders[(i + r) % contenders.length]!);
  const round = new Map<string, [number, number]>();
  for (const [name, receive] of order)
    round.set(name, await run(Array.from({ length: PER_ROUND }, event), receive));
  for (const [name, [rate, cpuRate]] of round) {
    rates.get(name)!.push(rate);
    ratios.get(name)!.push(rate / round.get('off')![0]);
    cpuRates.get(name)!.push(cpuRate);
    cpuRatios.get(name)!.push(cpuRate / round.get('off')![1]);
  }
}
const fmt = (x: number) => Math.round(x).toLocaleString('en');
console.log(
  `receive() with memoryStore, 2 KiB Stripe events, 2 deliveries each, ${ROUNDS} rounds of ${PER_ROUND} events, contenders rotated:`,
);
for (const [name] of contenders) {
  const rs = ratios.get(name)!;
  const cs = cpuRatios.get(name)!;
  console.log(
    `  ${name.padEnd(8)} wall ${fmt(median(rates.get(name)!)).padStart(7)} deliveries/s ${median(rs).toFixed(2)}x of off (min ${Math.min(...rs).toFixed(2)}x, max ${Math.max(...rs).toFixed(2)}x)   CPU ${fmt(median(cpuRates.get(name)!)).padStart(7)} deliveries/CPU-s ${median(cs).toFixed(2)}x (min ${Math.min(...cs).toFixed(2)}x, max ${Math.max(...cs).toFixed(2)}x)`,
  );
}
console.log('  target: full >= 0.9x of off');
const expected = contenders.length * (2_000 + ROUNDS * PER_ROUND);
if (effects !== expected)
  throw new Error(`effects ${effects}, expected ${expected}: a delivery ran twice or not at all`);
if (contenders.some(([name]) => name === 'full') && dropped.exported === 0)
  throw new Error('no span reached the exporter: the full contender traced nothing');

// The telemetry calls alone, without the deliveries around them: the CPU time otel() adds to one
// delivery (the average of a first delivery: verify, claim, handler, confirm, and a duplicate:
// verify, claim), set against the CPU time of a delivery without telemetry measured above. Steadier
// than the ratios above on a loaded machine; it leaves out what the extra garbage costs the heap.
const offCpuUs = 1e6 / median(cpuRates.get('off') ?? [Number.NaN]);
const info = { kind: 'delivery', provider: 'stripe', receiver: 'calls', store: 'memory' } as const;
function oneRun(telemetry: ReturnType<typeof otel>, first: boolean): void {
  const traced = telemetry.start(info);
  traced.wrap(() => {
    traced.phase('verify').end();
    traced.phase('claim').end();
    if (first) {
      traced.phase('handler').end();
      traced.phase('confirm').end(undefined, true);
    }
  });
  const result = {
    outcome: first ? 'processed' : 'duplicate',
    status: 200,
    provider: 'stripe',
    receiver: 'calls',
    id: 'evt_calls',
    type: 'invoice.paid',
    attempt: 1,
    durationMs: 1,
  };
  telemetry.outcome(result, 'receiver');
  traced.end(result);
}

// The SDK alone: what onceonly asks of it per delivery, made straight on the SDK with no onceonly
// code between (the same instruments, attribute sets made once, the same spans and attributes).
// The floor of any instrumentation that reports these metrics and spans: the best ratio to `off`
// it allows is printed beside it.
function sdkAlone(meterProvider: MeterProvider | undefined, tracerProvider: BasicTracerProvider | undefined) {
  const meter = meterProvider?.getMeter('sdk-alone');
  const tracer = tracerProvider?.getTracer('sdk-alone');
  const seconds = { unit: 's' };
  const delivery = meter?.createHistogram('onceonly.delivery.duration', seconds);
  const handler = meter?.createHistogram('onceonly.handler.duration', seconds);
  const store = meter?.createHistogram('onceonly.store.operation.duration', seconds);
  const where = { 'onceonly.provider': 'stripe', 'onceonly.receiver': 'sdk' };
  const run = { ...where, 'onceonly.run.kind': 'delivery' };
  const handled = { ...run, 'onceonly.handler.result': 'ok' };
  const op = (name: string) => ({
    'onceonly.store.operation': name,
    'onceonly.store.kind': 'memory',
    'onceonly.store.result': 'ok',
  });
  const claimed = op('claim');
  const confirmed = op('confirm');
  const outcomes = {
    processed: { ...where, 'onceonly.outcome': 'processed' },
    duplicate: { ...where, 'onceonly.outcome': 'duplicate' },
  };
  const spanAttributes = { ...run, 'onceonly.store.kind': 'memory' };
  return (first: boolean) => {
    const root = tracer?.startSpan('onceonly.delivery', { attributes: spanAttributes });
    const inside = root ? trace.setSpan(context.active(), root) : undefined;
    const child = (name: string) => tracer?.startSpan(name, { kind: SpanKind.INTERNAL }, inside);
    child('onceonly.verify')?.end();
    child('onceonly.claim')?.end();
    store?.record(0.0001, claimed);
    if (first) {
      child('onceonly.handler')?.end();
      handler?.record(0.0001, handled);
      const confirm = child('onceonly.confirm');
      confirm?.setAttribute('onceonly.lease.held', true);
      confirm?.end();
      store?.record(0.0001, confirmed);
    }
    const outcome = first ? outcomes.processed : outcomes.duplicate;
    delivery?.record(0.001, outcome);
    if (root) {
      root.setAttributes(outcome);
      root.setAttribute('onceonly.status', 200);
      root.setAttribute('onceonly.attempt', 1);
      root.setAttribute('onceonly.event.id', 'evt_calls');
      root.setAttribute('onceonly.event.type', 'invoice.paid');
      root.end();
    }
  };
}
const sdkDropped = new DropExporter();
const sdkTracer = () => new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(sdkDropped)] });
const sdkMeter = () => new MeterProvider({ readers: [new IdleReader()] });

/** CPU µs per call of `one(first)`, alternating first and duplicate deliveries. */
function cpuPerCall(one: (first: boolean) => void): number {
  const calls = small ? 50_000 : 200_000;
  for (let i = 0; i < calls; i++) one(i % 2 === 0);
  const cpu = process.cpuUsage();
  for (let i = 0; i < calls; i++) one(i % 2 === 0);
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / calls;
}
console.log(
  `telemetry calls alone (CPU per delivery; a delivery without telemetry: ${offCpuUs.toFixed(1)} µs), against the SDK alone doing the same records and spans:`,
);
for (const [name, telemetry, floor] of [
  ['metrics', metricsOnly, sdkAlone(sdkMeter(), undefined)],
  ['traces', tracesOnly, sdkAlone(undefined, sdkTracer())],
  ['full', full, sdkAlone(sdkMeter(), sdkTracer())],
] as const) {
  const us = cpuPerCall((first) => oneRun(telemetry, first));
  const sdkUs = cpuPerCall(floor);
  const ratio = (extra: number) => (offCpuUs / (offCpuUs + extra)).toFixed(2);
  console.log(
    `  ${name.padEnd(8)} onceonly +${us.toFixed(2)} µs => ${ratio(us)}x of off;  SDK alone +${sdkUs.toFixed(2)} µs => at best ${ratio(sdkUs)}x;  onceonly's own share ${(us - sdkUs).toFixed(2)} µs`,
  );
}
