/** `onceonly send` and `onceonly sign`: one signed delivery, sent to a receiver or printed for curl. */
import { answerText } from './answer.js';
import { type FlagSpec, parseFlags, UsageError, usage } from './args.js';
import { deliveryOf, listeningOrSaySo, providerHelp, timeoutOf, urlOf } from './kit.js';

const deliveryFlags = {
  provider: { type: 'string', help: 'the sender to imitate, e.g. stripe, github, shopify (list below)' },
  secret: { type: 'string', help: 'the signing secret your receiver verifies with' },
  type: { type: 'string', help: "event type of the sender's sample event (its first by default)" },
  payload: { type: 'string', help: 'a file (or - for stdin) whose bytes are the body, signed as they are' },
  id: { type: 'string', help: "event id (in the sample body, or the sender's id header); fresh by default" },
} satisfies FlagSpec;

export const sendFlags = {
  url: { type: 'string', help: "your receiver's URL, e.g. http://localhost:3000/webhooks/stripe" },
  ...deliveryFlags,
  repeat: {
    type: 'number',
    default: 1,
    help: 'send the same signed delivery this many times (2 shows the duplicate)',
  },
  timeout: { type: 'number', default: 10000, help: 'request timeout in ms' },
  json: { type: 'boolean', help: 'print the answers as JSON' },
  help: { type: 'boolean', help: 'show this help' },
} satisfies FlagSpec;

export const signFlags = {
  ...deliveryFlags,
  url: { type: 'string', help: 'where it will be sent (signed by Twilio and Square); makes --curl complete' },
  curl: { type: 'boolean', help: 'print a curl command instead of the header lines' },
  help: { type: 'boolean', help: 'show this help' },
} satisfies FlagSpec;

interface Answer {
  status: number;
  outcome: string | null;
  ms: number;
  body: string;
}

/** `onceonly send`: one signed delivery to a receiver; its answer and outcome header. */
export async function sendCommand(argv: readonly string[]): Promise<number> {
  const flags = parseFlags(argv, sendFlags);
  if (flags.help) {
    console.log(
      `${usage('send --provider <name> --url <url> --secret <secret> [--type t | --payload file] [flags]', 'Sends one delivery signed as the provider signs it, and prints the answer and its Onceonly-Outcome header.', sendFlags)}\n\n${providerHelp()}`,
    );
    return 0;
  }
  if (!flags.provider) throw new UsageError('--provider is required (see --help for the list)');
  const url = urlOf(flags.url);
  if (!Number.isInteger(flags.repeat) || flags.repeat < 1) throw new UsageError('--repeat must be 1 or more');
  const timeout = timeoutOf(flags.timeout);
  const delivery = deliveryOf({ ...flags, url: url.href });
  if (!(await listeningOrSaySo(url))) return 1;
  const answers: Answer[] = [];
  for (let i = 0; i < flags.repeat; i++) {
    const started = performance.now();
    try {
      // delivery.url is --url, or what signing made of it (Twilio adds bodySHA256 to a JSON body's).
      const res = await fetch(delivery.url, {
        ...delivery.init(),
        signal: AbortSignal.timeout(timeout),
      });
      const body = await answerText(res);
      answers.push({
        status: res.status,
        outcome: res.headers.get('onceonly-outcome'),
        ms: performance.now() - started,
        body,
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      const why =
        (error as Error).name === 'TimeoutError'
          ? `no answer within ${flags.timeout} ms`
          : (cause ?? (error as Error).message);
      console.error(`onceonly: the request to ${url.host} failed: ${why}`);
      return 1;
    }
  }
  if (flags.json) {
    console.log(
      JSON.stringify(
        { provider: delivery.provider, type: delivery.type, id: delivery.id, url: delivery.url, answers },
        null,
        2,
      ),
    );
  } else {
    console.log(
      `POST ${delivery.url}  (${delivery.provider} ${delivery.type}${delivery.id ? `, id ${delivery.id}` : ''})`,
    );
    for (const a of answers) {
      console.log(`→ ${a.status}  Onceonly-Outcome: ${a.outcome ?? '(none)'}  ${a.ms.toFixed(0)} ms`);
      if (a.body) console.log(`  ${a.body.length > 500 ? `${a.body.slice(0, 500)}…` : a.body}`);
    }
    if (answers.every((a) => a.outcome === null)) {
      console.log('note: no Onceonly-Outcome header: is this receiver onceonly?');
    }
  }
  return answers.every((a) => a.status >= 200 && a.status < 300) ? 0 : 1;
}

const sameBytes = (a: Uint8Array, b: Uint8Array) =>
  a.length === b.length && a.every((byte, i) => byte === b[i]) && !a.includes(0);

/** Quotes a value for a POSIX shell. */
const shell = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;

/** `onceonly sign`: the headers for a body, as the provider signs it, for curl. */
export async function signCommand(argv: readonly string[]): Promise<number> {
  const flags = parseFlags(argv, signFlags);
  if (flags.help) {
    console.log(
      `${usage('sign --provider <name> --secret <secret> [--type t | --payload file] [--curl --url <url>]', "Prints the headers the provider would send with the body (its sample event, or --payload's bytes), signed now; --curl prints a whole curl command.", signFlags)}\n\n${providerHelp()}`,
    );
    return 0;
  }
  if (!flags.provider) throw new UsageError('--provider is required (see --help for the list)');
  const url = flags.url === undefined ? undefined : urlOf(flags.url);
  const delivery = deliveryOf({ ...flags, ...(url ? { url: url.href } : {}) });
  if (!flags.curl) {
    // Signing changed the URL (Twilio binds a JSON body by its hash in the query): say where to send.
    const asked = url?.href ?? `http://localhost:3000/webhooks/${delivery.provider}`; // the kit's default
    if (delivery.url !== asked)
      console.error(`onceonly: ${delivery.provider} signed the URL: send it to ${delivery.url}`);
    for (const [name, value] of Object.entries(delivery.headers)) console.log(`${name}: ${value}`);
    if (flags.payload === undefined) console.log(`\n${delivery.text}`);
    return 0;
  }
  const fromFile = flags.payload !== undefined && flags.payload !== '-';
  // Inline, the body must be exactly its text: a shell argument holds no NUL, and bytes that are
  // not UTF-8 would reach curl as other bytes than the ones signed.
  if (!fromFile && !sameBytes(new TextEncoder().encode(delivery.text), delivery.body)) {
    throw new UsageError(
      '--curl: the body is not plain UTF-8 text (a NUL, or bytes that are not UTF-8): save it to a file and give --payload <file>',
    );
  }
  // --globoff: [ ] { } in a URL are not curl's ranges. --data-raw: a body starting with @ is
  // sent as it is, never read as a file name.
  const parts = [`curl -sS -i --globoff -X POST ${shell(delivery.url)}`];
  for (const [name, value] of Object.entries(delivery.headers))
    parts.push(`-H ${shell(`${name}: ${value}`)}`);
  parts.push(fromFile ? `--data-binary @${shell(flags.payload!)}` : `--data-raw ${shell(delivery.text)}`);
  console.log(parts.join(' \\\n  '));
  return 0;
}
