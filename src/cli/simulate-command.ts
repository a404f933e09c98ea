/** `onceonly simulate`: the demo's delivery pattern fired at any receiver. */
import { randomBytes } from 'node:crypto';
import { senders, signedDelivery } from '../testing/deliveries/index.js';
import type { SenderName } from '../testing/deliveries/names.js';
import { type FlagSpec, parseFlags, UsageError, usage } from './args.js';
import { listeningOrSaySo, providerHelp, senderOf, timeoutOf, urlOf } from './kit.js';
import { progressBar, table } from './report.js';
import { SIM_PROVIDERS, type SimProvider } from './sign.js';
import { type SimSender, simulate } from './simulate.js';

/** Any sender of the test kit as the simulator's sender: its sample events, re-signed every attempt. */
function kitSender(name: SenderName, secret: string, url: string): SimSender {
  return {
    event: (_n, type) => {
      const d = signedDelivery(name, { secret, url, ...(type ? { type } : {}) });
      return { id: d.id ?? '', body: d.text };
    },
    sign: (id, body, type) => {
      const d = signedDelivery(name, { secret, url, id, payload: body, ...(type ? { type } : {}) });
      // The delivery's own URL: Twilio signs a JSON body's hash into it (bodySHA256).
      return { body: d.text, headers: { ...d.headers }, url: d.url };
    },
  };
}

export const simulateFlags = {
  url: { type: 'string', help: "your receiver's URL, e.g. http://localhost:3000/webhooks/stripe" },
  provider: {
    type: 'string',
    default: 'stripe',
    help: 'the sender to imitate: any of the list below (standard-webhooks for any Standard Webhooks sender)',
  },
  secret: { type: 'string', help: "the endpoint's signing secret (whsec_...)" },
  type: {
    type: 'string',
    help: 'event type, or several comma-separated taken in turn (default invoice.paid; issues for github)',
  },
  events: { type: 'number', default: 200, help: 'events to deliver' },
  concurrency: { type: 'number', default: 16, help: 'requests in flight at once' },
  'duplicate-rate': { type: 'number', default: 0.3, help: 'share of events sent again after success' },
  'concurrent-rate': { type: 'number', default: 0.2, help: 'share of events sent as 3 simultaneous copies' },
  'max-attempts': { type: 'number', default: 8, help: 'attempts per copy before giving up' },
  timeout: { type: 'number', default: 10000, help: 'request timeout in ms' },
  json: { type: 'boolean', help: 'print the report as JSON' },
  help: { type: 'boolean', help: 'show this help' },
} satisfies FlagSpec;

export async function simulateCommand(argv: readonly string[]): Promise<number> {
  const flags = parseFlags(argv, simulateFlags);
  if (flags.help) {
    console.log(
      `${usage(
        'simulate --url <url> --secret <secret> [flags]',
        'Sends signed events to your receiver the way an at-least-once provider does: duplicates, concurrent copies, retries with backoff.',
        simulateFlags,
      )}\n\n${providerHelp()}`,
    );
    return 0;
  }
  const url = urlOf(flags.url);
  const requestTimeoutMs = timeoutOf(flags.timeout);
  if (!flags.secret)
    throw new UsageError('--secret is required (the signing secret your receiver verifies with)');
  // The demo's three keep their own signer (the same schemes); every other sender signs with the kit.
  const builtIn = SIM_PROVIDERS.includes(flags.provider as SimProvider);
  const sender = builtIn ? undefined : kitSender(senderOf(flags.provider), flags.secret, url.href);
  const types = flags.type
    ?.split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  if (flags.type !== undefined && types?.length === 0)
    throw new UsageError(`--type needs at least one event type, e.g. --type invoice.paid,customer.created`);
  if (sender && types) {
    const known = senders.find((entry) => entry.name === senderOf(flags.provider))!.types;
    const unknown = types.find((type) => !known.includes(type));
    if (unknown !== undefined)
      throw new UsageError(`no sample event of type ${JSON.stringify(unknown)}; one of ${known.join(', ')}`);
  }
  if (!(await listeningOrSaySo(url))) return 1;
  const quiet = flags.json || !process.stderr.isTTY;
  const report = await simulate({
    url: flags.url,
    provider: (builtIn ? flags.provider : 'stripe') as SimProvider,
    ...(sender ? { sender } : {}),
    secret: flags.secret,
    events: flags.events,
    ...(types ? { types } : {}),
    concurrency: flags.concurrency,
    duplicateRate: flags['duplicate-rate'],
    concurrentRate: flags['concurrent-rate'],
    requestTimeoutMs,
    maxAttempts: flags['max-attempts'],
    backoffMs: 200,
    maxBackoffMs: 5_000,
    run: `sim${randomBytes(3).toString('hex')}`,
    onProgress: quiet ? undefined : progressBar(flags.events),
  });
  const { eventIds: _ids, ...summary } = report;
  if (flags.json) console.log(JSON.stringify({ ...summary, gaveUp: report.gaveUp }, null, 2));
  else {
    console.log(
      table(`onceonly simulate → ${flags.url}: ${report.events} events in ${report.seconds.toFixed(1)} s`, [
        ['events', report.events],
        ['deliveries', report.deliveries],
        ['acknowledged (2xx)', report.acknowledged],
        ['duplicates suppressed', report.byOutcome.duplicate ?? 0],
        ['in-flight deferrals (409)', report.byOutcome['in-flight'] ?? 0],
        ['handler failures (500)', report.byOutcome.failed ?? 0],
        ['rejected (4xx)', rejected(report.byCode)],
        ['timeouts', report.timeouts],
        ['dropped connections', report.dropped],
        ['events never acknowledged', report.gaveUp.length],
      ]),
    );
    if (report.withOutcomeHeader === 0 && report.deliveries > 0) {
      console.log(
        'note: no Onceonly-Outcome headers seen: is this receiver onceonly? Counts by status only.',
      );
    }
  }
  return report.gaveUp.length === 0 ? 0 : 1;
}

/** Refusals in total, then by code: `3 (invalid_signature 2, http-404 1)`. */
function rejected(byCode: Record<string, number>): string | number {
  const entries = Object.entries(byCode).sort((a, b) => b[1] - a[1]);
  const total = entries.reduce((n, [, c]) => n + c, 0);
  return total === 0 ? 0 : `${total} (${entries.map(([code, n]) => `${code} ${n}`).join(', ')})`;
}
