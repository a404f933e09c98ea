/**
 * The receiver and handler behaviour behind every adapter test, in a file free of `node:test` so the
 * Next.js fixture app can load it too.
 */
import { createHash, randomUUID } from 'node:crypto';
import {
  createReceiver,
  type DeliveryResult,
  hmac,
  memoryStore,
  type Receiver,
  type ReceiverOptions,
  type Store,
  VerificationError,
} from '../../src/index.js';

export const SECRET = 'adapter-test-secret-do-not-leak';
/** Small enough that the oversized cases stay fast, large enough for every ordinary delivery. */
export const MAX_BODY = 16 * 1024;
/** A large delivery (a GitHub push of many commits): under the default `maxBodyBytes` of 1 MiB. */
export const LARGE_BODY = 900 * 1024;
/** The handler deadline: long enough for a loaded 2-core machine, short enough for the timeout case. */
export const DEADLINE = '2s';

export type GithubLikeEvent = { id: string; action: string; padding?: string };

/** The token a handshake GET must carry (Meta's `hub.verify_token`). */
export const VERIFY_TOKEN = 'adapter-verify-token';

/**
 * Two handshakes, the way senders do them: a GET `?hub.mode=subscribe&hub.verify_token=..&hub.challenge=..`
 * answered with the challenge when the token is ours (Meta), and a POST carrying `X-Hook-Secret`
 * answered by echoing it (Asana).
 */
const handshake: NonNullable<Parameters<typeof hmac>[0]['handshake']> = ({ method, url, headers }) => {
  if (method === 'GET') {
    const query = new URL(url ?? '/', 'http://localhost').searchParams;
    if (query.get('hub.mode') !== 'subscribe') return undefined;
    if (query.get('hub.verify_token') !== VERIFY_TOKEN) {
      throw new VerificationError('invalid_token', 'onceonly: the hub.verify_token is not ours');
    }
    return { body: query.get('hub.challenge') ?? '' };
  }
  const hookSecret = headers.get('x-hook-secret');
  return method === 'POST' && hookSecret ? { headers: { 'X-Hook-Secret': hookSecret } } : undefined;
};

/**
 * The generic HMAC provider set up the way GitHub signs: `X-Hub-Signature-256: sha256=<hex>`; with
 * `handshakes`, it also answers the two handshakes above.
 */
export function githubLike(handshakes = false) {
  return hmac<GithubLikeEvent>({
    name: 'github',
    secret: SECRET,
    signatureHeader: 'x-hub-signature-256',
    signaturePrefix: 'sha256=',
    typeHeader: 'x-github-event',
    idHeader: 'x-github-delivery',
    ...(handshakes ? { handshake } : {}),
  });
}

/** Handler behaviour is chosen by the event's `action`, so one server serves every case. */
export class Behaviour {
  readonly runs = new Map<string, number>();
  readonly attempts = new Map<string, number>();
  private readonly gates = new Map<string, { started: () => void; open: Promise<void> }>();
  private readonly failed = new Set<string>();

  /** Holds `id`'s handler until `release` is called; resolves `started` when it begins. */
  gate(id: string): { started: Promise<void>; release: () => void } {
    let started!: () => void;
    let release!: () => void;
    const startedP = new Promise<void>((resolve) => (started = resolve));
    const open = new Promise<void>((resolve) => (release = resolve));
    this.gates.set(id, { started, open });
    return { started: startedP, release };
  }

  readonly handler: NonNullable<ReceiverOptions<ReturnType<typeof githubLike>>['handler']> = async ({
    event,
    signal,
  }) => {
    this.attempts.set(event.id, (this.attempts.get(event.id) ?? 0) + 1);
    switch (event.action) {
      case 'gate': {
        const gate = this.gates.get(event.id);
        gate?.started();
        await gate?.open;
        break;
      }
      case 'throw-once':
        if (!this.failed.has(event.id)) {
          this.failed.add(event.id);
          throw new Error('payment API timed out: token=sk_live_secret');
        }
        break;
      case 'hang-once':
        if (!this.failed.has(event.id)) {
          this.failed.add(event.id);
          await new Promise((_, reject) =>
            signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
          );
        }
        break;
      case 'respond':
        this.runs.set(event.id, (this.runs.get(event.id) ?? 0) + 1);
        return new Response('accepted by the handler', {
          status: 202,
          headers: [
            ['content-type', 'text/plain'],
            ['x-handler', 'own-response'],
            ['set-cookie', 'a=1; Path=/'],
            ['set-cookie', 'b=2; Path=/'],
          ],
        });
      // A Response that cannot be sent: its body read already (a constant returned twice), failing
      // with a message an answer must not show, or never ending.
      case 'respond-used': {
        this.runs.set(event.id, (this.runs.get(event.id) ?? 0) + 1);
        const used = new Response('read already', { status: 202 });
        await used.text();
        return used;
      }
      case 'respond-broken':
        this.runs.set(event.id, (this.runs.get(event.id) ?? 0) + 1);
        return new Response(
          new ReadableStream({
            start: (controller) => controller.error(new Error('upstream reset at /srv/app/secret.ts:12')),
          }),
          { status: 202 },
        );
      case 'respond-endless':
        this.runs.set(event.id, (this.runs.get(event.id) ?? 0) + 1);
        return new Response(
          new ReadableStream({
            start: (controller) => controller.enqueue(new TextEncoder().encode('partial')),
            pull: () => new Promise(() => {}),
          }),
          { status: 202 },
        );
    }
    this.runs.set(event.id, (this.runs.get(event.id) ?? 0) + 1);
    return undefined;
  };
}

export interface Fixture {
  receiver: Receiver;
  store: Store;
  behaviour: Behaviour;
  outcomes: DeliveryResult[];
  options: ReceiverOptions<ReturnType<typeof githubLike>>;
}

/** A receiver (and the options that made it) over a fresh memory store. */
export function fixture(overrides: Partial<ReceiverOptions<ReturnType<typeof githubLike>>> = {}): Fixture {
  const behaviour = new Behaviour();
  const outcomes: DeliveryResult[] = [];
  const store = memoryStore();
  const options: ReceiverOptions<ReturnType<typeof githubLike>> = {
    provider: githubLike(),
    store,
    handler: behaviour.handler,
    maxBodyBytes: MAX_BODY,
    timeout: DEADLINE,
    onOutcome: (result) => {
      outcomes.push(result);
    },
    ...overrides,
  };
  return { receiver: createReceiver(options), store, behaviour, outcomes, options };
}

/** A receiver whose provider answers handshakes (a GET challenge, a POST X-Hook-Secret echo). */
export function handshakeFixture(): Fixture {
  return fixture({ provider: githubLike(true) });
}

let counter = 0;
/** A fresh event id, unique across runs. */
export function eventId(): string {
  counter += 1;
  return `evt_${randomUUID().slice(0, 8)}_${counter}`;
}

export function bodyOf(event: GithubLikeEvent): string {
  return JSON.stringify(event);
}

/** The dedup key the GitHub-like provider uses: a digest of the signed body (its id header is unsigned). */
export function keyOf(body: string): string {
  return `github:~body:${createHash('sha256').update(body).digest('hex')}`;
}
