/**
 * The Redis inbox's values: key spaces, how a delivery is stored (JSON head, a newline, the body's
 * bytes), an entry's fields as the scripts return them, and the views made of them. No I/O.
 */
import { ConfigError } from '../../core/errors.js';
import {
  type InboxAcceptInput,
  type InboxDelivery,
  type InboxEntryView,
  type InboxState,
  isStoredDelivery,
} from '../../core/inbox.js';

// Lua formats numbers with 14 significant digits: durations stay below 1e13 ms.
export const MAX_MS = 1e13;
const SPACE = /^([A-Za-z0-9][A-Za-z0-9._-]{0,63}):/;
export const STATES: Record<string, InboxState> = {
  p: 'pending',
  r: 'processing',
  c: 'completed',
  d: 'dead',
};
export const LETTERS: Record<InboxState, string> = {
  pending: 'p',
  processing: 'r',
  completed: 'c',
  dead: 'd',
};
export const RANK: Record<InboxState, number> = { dead: 0, pending: 1, processing: 2, completed: 3 };

/** The key space of a key: its part before the first `:` when that is a valid space name, else `~`. */
export function spaceOf(key: string): string {
  return SPACE.exec(key)?.[1] ?? '~';
}

/** The space a receiver's own keys (`<receiver>:...`) live in. */
export const homeOf = (receiver: string) => spaceOf(`${receiver}:`);

export function ms(value: number, name: string, min: number): number {
  if (!Number.isFinite(value) || value < min || value > MAX_MS) {
    throw new ConfigError(
      'invalid_duration',
      `onceonly: redisStore inbox ${name} must be between ${min} ms and ${MAX_MS} ms, got ${value}`,
    );
  }
  return Math.ceil(value);
}

export function text(value: unknown): string {
  if (value instanceof Uint8Array)
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString();
  return String(value);
}

const optional = (value: unknown) => (value === null || value === undefined ? undefined : text(value));

function binary(value: unknown): Buffer {
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  throw new ConfigError(
    'invalid_option',
    "onceonly: redisStore's inbox got a delivery back as text, not bytes: the client must hand bulk replies back as Buffers when asked (node-redis sendCommand with a typeMapping in v5 or returnBuffers in v4, ioredis evalshaBuffer); a wrapper around the client must pass those through",
  );
}

export interface Queue {
  readonly space: string;
  readonly receiver: string;
  readonly base: string;
  /** The receiver as it appears in key names. */
  readonly part: string;
}

/** The delivery as stored: JSON [headers, url, receivedAt], a newline, the body's bytes. */
export function packDelivery(input: InboxDelivery): Buffer {
  const head = Buffer.from(
    `${JSON.stringify([input.headers, input.url ?? null, input.receivedAt.getTime()])}\n`,
  );
  const body = input.body;
  return Buffer.concat([head, Buffer.from(body.buffer, body.byteOffset, body.byteLength)]);
}

export function unpackDelivery(value: unknown): InboxDelivery {
  const packed = binary(value);
  const cut = packed.indexOf(10);
  if (cut < 0) throw new Error('its delivery has no JSON head');
  const head: unknown = JSON.parse(packed.toString('utf8', 0, cut));
  if (!isStoredDelivery(head)) throw new Error('its delivery head is not [headers, url, receivedAt]');
  const [headers, url, receivedAt] = head;
  // A copy: the reply's buffer may be a slice of a larger one.
  const body = new Uint8Array(packed.subarray(cut + 1));
  return { body, headers, url: url ?? undefined, receivedAt: new Date(receivedAt) };
}

/** The delivery for a view: none when it was changed outside onceonly (a take buries it). */
export function readableDelivery(value: unknown): InboxDelivery | undefined {
  try {
    return unpackDelivery(value);
  } catch {
    return undefined;
  }
}

/** The optional fields of an entry, JSON-encoded (lossless for any string), only when present. */
export function optionalFields(input: InboxAcceptInput, sk: string, part: string): string[] {
  const out: string[] = [];
  if (input.type !== undefined) out.push('ty', JSON.stringify(input.type));
  if (input.id !== undefined) out.push('id', JSON.stringify(input.id));
  if (input.item !== undefined) out.push('it', JSON.stringify(input.item));
  if (input.key !== sk) out.push('k', JSON.stringify(input.key));
  if (input.receiver !== part) out.push('r', JSON.stringify(input.receiver));
  return out;
}

/** An entry's fields as the scripts return them (`viewFields` in redis/inbox-scripts.ts). */
interface Fields {
  state: InboxState;
  attempts: number;
  acceptedAt: number;
  due: number;
  updatedAt: number;
  lastError: string | undefined;
  fingerprint: string;
  key: string;
  receiver: string;
  type: string | undefined;
  id: string | undefined;
  item: string | undefined;
}

export const json = (value: unknown) =>
  value === null || value === undefined ? undefined : (JSON.parse(text(value)) as string);

/** For views: a field that is not JSON (changed outside onceonly) shown as it is stored. */
export const shown = (value: unknown) => {
  try {
    return json(value);
  } catch {
    return text(value);
  }
};

const present = (value: unknown) => value !== null && value !== undefined;

export function fields(
  sk: unknown,
  f: unknown[],
  read: (value: unknown) => string | undefined = json,
): Fields {
  const acceptedAt = Number(text(f[3]));
  return {
    state: STATES[text(f[0])] ?? 'pending',
    // A plain accept leaves out n, d and u until the entry first changes: 0, a, a.
    attempts: present(f[2]) ? Number(text(f[2])) : 0,
    acceptedAt,
    due: present(f[4]) ? Number(text(f[4])) : acceptedAt,
    updatedAt: present(f[5]) ? Number(text(f[5])) : acceptedAt,
    lastError: optional(f[6]),
    fingerprint: text(f[7]),
    key: read(f[9]) ?? text(sk),
    receiver: read(f[10]) ?? text(f[8]),
    type: read(f[11]),
    id: read(f[12]),
    item: read(f[13]),
  };
}

export function view(f: Fields, hasBody: boolean): InboxEntryView {
  return {
    key: f.key,
    receiver: f.receiver,
    state: f.state,
    type: f.type,
    id: f.id,
    attempts: f.attempts,
    acceptedAt: new Date(f.acceptedAt),
    dueAt: new Date(f.due),
    updatedAt: new Date(f.updatedAt),
    lastError: f.lastError,
    hasBody,
  };
}
