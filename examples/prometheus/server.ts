/**
 * onceonly's OpenTelemetry metrics scraped by Prometheus, and a readiness endpoint on health().
 * Run from this folder: `npx tsx server.ts`, then point Prometheus at http://127.0.0.1:3000/metrics
 * (or run `npx onceonly simulate --url http://127.0.0.1:3000/webhooks` and look at /metrics).
 *
 *   POST /webhooks   Stripe webhooks, received once
 *   GET  /metrics    the Prometheus exposition (@opentelemetry/exporter-prometheus, same port)
 *   GET  /ready      200 when the store is healthy, else 503, with the health report as JSON
 *
 * Traces: register a TracerProvider as usual (NodeSDK, or BasicTracerProvider + an exporter) and
 * otel() picks it up; the alert rules to paste are in docs/observability.md.
 *
 * It imports the package by name, as your app would (the repository's `npm install` builds it).
 */
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { createReceiver, memoryStore } from 'onceonly';
import { webhook } from 'onceonly/node';
import { otel } from 'onceonly/otel';
import { stripe } from 'onceonly/providers';

const secret = process.env.STRIPE_WEBHOOK_SECRET ?? 'whsec_onceonlyDemoSecret0123456789';

// The exporter is a MetricReader: served from this app's own server instead of a second port.
const exporter = new PrometheusExporter({ preventServerStart: true });
const meterProvider = new MeterProvider({ readers: [exporter] });

const receiver = createReceiver({
  provider: stripe({ secret }),
  store: memoryStore(), // one process only; use redisStore / postgresStore when you run several
  handler: async ({ event }) => {
    if (process.env.VERBOSE) console.log(`${event.type} ${event.id}`);
  },
  telemetry: otel({ meterProvider }),
});
const receive = webhook(receiver, { onError: (error) => console.error(error) });

const server = createServer((req, res) => {
  if (req.url === '/webhooks') return receive(req, res);
  if (req.url === '/metrics' && req.method === 'GET') return exporter.getMetricsRequestHandler(req, res);
  if (req.url === '/ready' && req.method === 'GET') {
    receiver.health().then((report) => {
      res.writeHead(report.ok ? 200 : 503, { 'content-type': 'application/json' });
      res.end(JSON.stringify(report));
    });
    return;
  }
  res.writeHead(404).end();
});

const port = Number(process.env.PORT ?? 3000);
server.listen(port, '127.0.0.1', () => {
  const url = `http://127.0.0.1:${port}`;
  const body = JSON.stringify({
    id: 'evt_prometheus_1',
    object: 'event',
    type: 'invoice.paid',
    data: { object: {} },
  });
  const t = Math.floor(Date.now() / 1000);
  const v1 = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
  console.log(
    `onceonly + Prometheus listening on ${url}/webhooks (metrics at ${url}/metrics, readiness at ${url}/ready)`,
  );
  console.log('send a signed delivery twice (processed, then duplicate), then read the counters:');
  console.log(
    `  curl -si ${url}/webhooks -H 'content-type: application/json' -H 'stripe-signature: t=${t},v1=${v1}' -d '${body}'`,
  );
  console.log(`  curl -s ${url}/metrics | grep onceonly_deliveries`);
});
