/**
 * What `send`, `sign` and `simulate` share: the test kit's senders (`onceonly/testing`) by name,
 * a signed delivery from the flags, the providers' list for `--help`, and a quick check that
 * something listens where a delivery is to go.
 */
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import {
  type SenderName,
  type SignedDelivery,
  senders,
  signedDelivery,
} from '../testing/deliveries/index.js';
import { UsageError } from './args.js';

/** The senders the CLI can sign for (those with a shared secret; key-signed ones need test keys in code). */
export const cliSenders = senders.filter((s) => s.credential === 'secret');

/** `--help`'s list: each provider with its event types, the default first. */
export function providerHelp(): string {
  const lines = ['providers and their event types (the first is the default):'];
  for (const s of cliSenders) lines.push(`  ${s.name.padEnd(18)} ${s.types.join(', ')}`);
  const keyed = senders.filter((s) => s.credential === 'keys').map((s) => s.name);
  lines.push(
    '',
    `${keyed.join(', ')} sign with their own private key: use testKeys() from onceonly/testing in code.`,
  );
  return lines.join('\n');
}

/** Resolves `--provider` (the kit's name; `standard-webhooks` stands for `standardWebhooks`). */
export function senderOf(provider: string): SenderName {
  const name = provider === 'standard-webhooks' ? 'standardWebhooks' : provider;
  const sender = senders.find((s) => s.name === name);
  if (!sender) {
    throw new UsageError(
      `unknown --provider ${JSON.stringify(provider)}; one of ${cliSenders.map((s) => s.name).join(', ')}`,
    );
  }
  if (sender.credential === 'keys') {
    throw new UsageError(
      `${sender.name} signs with its own private key, which no CLI flag can stand for: in a test, sign with signedDelivery('${sender.name}', { keys: testKeys('${sender.name}') }) from onceonly/testing`,
    );
  }
  return sender.name as SenderName;
}

/** `--payload`: a file's bytes, `-` for stdin. */
export function payloadOf(path: string | undefined): Uint8Array | undefined {
  if (path === undefined) return undefined;
  try {
    return new Uint8Array(readFileSync(path === '-' ? 0 : path));
  } catch (error) {
    throw new UsageError(`--payload ${path}: ${(error as Error).message}`);
  }
}

export interface DeliveryFlags {
  provider: string;
  secret?: string | undefined;
  type?: string | undefined;
  payload?: string | undefined;
  id?: string | undefined;
  url?: string | undefined;
}

/** One signed delivery from the flags; every mistake is a one-line UsageError. */
export function deliveryOf(flags: DeliveryFlags): SignedDelivery {
  const name = senderOf(flags.provider);
  if (!flags.secret)
    throw new UsageError('--secret is required (the signing secret your receiver verifies with)');
  const sender = senders.find((s) => s.name === name)!;
  if (flags.type !== undefined && flags.payload === undefined && !sender.types.includes(flags.type)) {
    throw new UsageError(
      `${name} has no sample event of type ${JSON.stringify(flags.type)}; one of ${sender.types.join(', ')}, or give --payload <file>`,
    );
  }
  try {
    return signedDelivery(name, {
      secret: flags.secret,
      ...(flags.type !== undefined ? { type: flags.type } : {}),
      ...(flags.id !== undefined ? { id: flags.id } : {}),
      ...(flags.url !== undefined ? { url: flags.url } : {}),
      ...(flags.payload !== undefined ? { payload: payloadOf(flags.payload) } : {}),
    });
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError((error as Error).message.replace(/^onceonly\/testing: /, ''));
  }
}

/** A `--timeout` in ms, checked: a timer holds a whole number up to 2^31 - 1 (past it, it fires at once). */
export function timeoutOf(ms: number): number {
  if (!Number.isInteger(ms) || ms < 1 || ms > 2_147_483_647)
    throw new UsageError(`--timeout must be a whole number of ms from 1 to 2147483647, got ${ms}`);
  return ms;
}

/** A URL flag, checked: http(s) only. */
export function urlOf(url: string | undefined): URL {
  if (!url) throw new UsageError('--url is required (your receiver, e.g. http://localhost:3000/webhooks)');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--url is not a URL: ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new UsageError(`--url must be http or https, got ${parsed.protocol}`);
  return parsed;
}

/** Thrown when nothing accepts connections at the URL's host and port. */
class NothingListening extends Error {}

/**
 * Connects to the URL's host and port once, within `timeoutMs`: a refused connection is
 * `NothingListening` at once, instead of a run of retries that ends a minute later.
 */
async function ensureListening(url: URL, timeoutMs = 3_000): Promise<void> {
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const host = url.hostname.replace(/^\[|\]$/g, '');
  await new Promise<void>((resolve, reject) => {
    const socket = connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(); // slow is not refused: the run's own timeouts and retries take it from here
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.end();
      resolve();
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      socket.destroy();
      if (error.code === 'ECONNREFUSED' || error.code === 'ENOTFOUND' || error.code === 'EAI_AGAIN') {
        reject(
          new NothingListening(
            error.code === 'ECONNREFUSED'
              ? `nothing is listening on ${url.host} (connection refused): is your receiver running?`
              : `cannot resolve ${url.hostname}: check --url`,
          ),
        );
      } else resolve();
    });
  });
}

/**
 * `ensureListening` for a command: true when something may be listening; otherwise says why on
 * stderr and returns false, for the command to exit 1.
 */
export async function listeningOrSaySo(url: URL): Promise<boolean> {
  try {
    await ensureListening(url);
    return true;
  } catch (error) {
    if (!(error instanceof NothingListening)) throw error;
    console.error(`onceonly: ${error.message}`);
    return false;
  }
}
