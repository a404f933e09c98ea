/**
 * How the Redis store talks to a client: node-redis (v4, v5; client or cluster) and ioredis (client
 * or Cluster) adapted to one `Wire`, each command on one key's node, always as a promise. Only the
 * clients' shapes are used: neither package is imported at run time.
 */
import { ConfigError } from '../../errors.js';
import {
  ADVANCE,
  CLAIM,
  CONFIRM,
  EXTEND,
  INSPECT,
  RECORD,
  RELEASE,
  type Script,
  STEPS_LOAD,
  STEPS_SAVE,
  script,
} from './scripts.js';

export type { Script } from './scripts.js';

/**
 * The part of a node-redis (`redis` v5+) client or cluster the store uses: `createClient()`,
 * `createCluster()`. Commands go through `sendCommand` (the typed helpers cost more per call than
 * the command itself); `evalSha` only tells a node-redis client from an ioredis one.
 */
export interface NodeRedisLike {
  evalSha(sha1: string, options: { keys: string[]; arguments: string[] }): PromiseLike<unknown>;
  /** A client's `sendCommand(args)`, or a cluster's `sendCommand(firstKey, isReadonly, args)`. */
  sendCommand(...args: never[]): PromiseLike<unknown>;
}

/** The part of an ioredis client or cluster the store uses: `new Redis()`, `new Cluster()`. */
export interface IoRedisLike {
  evalsha(sha1: string, numkeys: number, ...args: string[]): PromiseLike<unknown>;
  eval(script: string, numkeys: number, ...args: string[]): PromiseLike<unknown>;
  call(command: string, ...args: string[]): PromiseLike<unknown>;
  /** The inbox's: replies with bulk strings as Buffers (an inbox body is bytes). */
  evalshaBuffer?(sha1: string, numkeys: number, ...args: (string | Buffer)[]): PromiseLike<unknown>;
  evalBuffer?(script: string, numkeys: number, ...args: (string | Buffer)[]): PromiseLike<unknown>;
}

/** A node-redis or ioredis client, standalone or cluster; Valkey servers work with either. */
export type RedisClientLike = NodeRedisLike | IoRedisLike;

export const scripts = {
  claim: script(CLAIM),
  confirm: script(CONFIRM),
  release: script(RELEASE),
  extend: script(EXTEND),
  record: script(RECORD),
  advance: script(ADVANCE),
  inspect: script(INSPECT),
  saveStep: script(STEPS_SAVE),
  loadSteps: script(STEPS_LOAD),
};

/** How the inbox talks to the client: replies keep bulk strings as Buffers (bodies are bytes). */
export interface InboxWire {
  /** EVALSHA (EVAL on NOSCRIPT) over keys of one slot, sent to the node of the first. */
  script(s: Script, keys: string[], args: (string | Buffer)[]): Promise<unknown>;
  /** One command on the node that holds `key`. */
  command(key: string, args: string[]): Promise<unknown>;
}

/**
 * How the store talks to a client: each command on one key's node (and the inbox's), always as a
 * promise (see `attempt`).
 */
export interface Wire extends InboxWire {
  /**
   * A script by its SHA1 (EVALSHA) over `key` and, when given, `also` (a key of the same slot: its
   * steps); `call()` falls back to `eval` on NOSCRIPT.
   */
  evalsha(s: Script, key: string, args: string[], also?: string): Promise<unknown>;
  /** A script by its body (EVAL), which also caches it on the server. */
  eval(s: Script, key: string, args: string[], also?: string): Promise<unknown>;
  /** `SET key value NX PX px GET`: the value the key already held, or null when the SET won. */
  setNx(key: string, value: string, px: number): Promise<unknown>;
  /** `TIME` on the node that holds `key`: [seconds, microseconds]. */
  time(key: string): Promise<unknown>;
  /** `PTTL key`: the key's time to live in ms, -1 without one, -2 when it is gone. */
  pttl(key: string): Promise<unknown>;
  /**
   * `SET key value IFEQ expected PX px` (Valkey 8.1+, Redis 8.4+): `OK` when the key held exactly
   * `expected`, else null; a server without IFEQ answers a syntax error. With `get`, the same SET
   * with GET: the value the key held (set only if that was `expected`), or null when it had none.
   */
  setIfEq(key: string, value: string, expected: string, px: string, get?: boolean): Promise<unknown>;
  /** A Redis Cluster client: its nodes' clocks are several, and `TIME` reads one of them. */
  readonly cluster: boolean;
}

/**
 * An error the server answered: Redis error replies start with an upper-case code (ERR, OOM,
 * LOADING, BUSY, READONLY...); the clients' own errors (refused, closed, offline, retries
 * exhausted) do not.
 */
export function serverError(err: unknown): boolean {
  return /^[A-Z][A-Z_-]+\b/.test(err instanceof Error ? err.message : String(err));
}

/**
 * A command's promise, however the client answers: a thenable is made a promise, and a client (a
 * wrapper, a circuit breaker) that refuses the command by throwing at once gives a rejected one, so
 * every caller maps it like any other failure. Every command of the wire goes through here.
 */
export function attempt(send: () => PromiseLike<unknown>): Promise<unknown> {
  try {
    return Promise.resolve(send());
  } catch (err) {
    return Promise.reject(err);
  }
}

export function isNoScript(err: unknown): boolean {
  return err instanceof Error && err.message.includes('NOSCRIPT');
}

interface NodeRedisClusterLike {
  masters?: unknown;
  nodeClient?: unknown;
  sendCommand(
    firstKey: string,
    isReadonly: boolean,
    args: (string | Buffer)[],
    options?: object,
  ): PromiseLike<unknown>;
}

// Command options that hand bulk strings back as Buffers: node-redis v5 reads `typeMapping`
// (RESP_TYPES.BLOB_STRING is 36, '$'), v4 reads `returnBuffers` and ignores the other. The inbox's
// replies carry bodies, which are bytes.
const BUFFERS = { typeMapping: { 36: Buffer }, returnBuffers: true };

function ioBuffers(): never {
  throw new ConfigError(
    'invalid_option',
    "onceonly: redisStore's inbox needs the ioredis client's evalshaBuffer and evalBuffer (ioredis 5 or later)",
  );
}

export function adapt(client: RedisClientLike): Wire {
  if (typeof (client as NodeRedisLike).evalSha === 'function') {
    const cluster = client as unknown as NodeRedisClusterLike;
    const isCluster = Array.isArray(cluster.masters) && typeof cluster.nodeClient === 'function';
    // A cluster routes by the key given first; a client takes the arguments alone.
    const send: (key: string, args: string[]) => Promise<unknown> = isCluster
      ? (key, args) => attempt(() => cluster.sendCommand(key, false, args))
      : (_key, args) =>
          attempt(() =>
            (client as unknown as { sendCommand(a: string[]): PromiseLike<unknown> }).sendCommand(args),
          );
    const sendBuffers: (key: string, args: (string | Buffer)[]) => Promise<unknown> = isCluster
      ? (key, args) => attempt(() => cluster.sendCommand(key, false, args, BUFFERS))
      : (_key, args) =>
          attempt(() =>
            (
              client as unknown as { sendCommand(a: (string | Buffer)[], o: object): PromiseLike<unknown> }
            ).sendCommand(args, BUFFERS),
          );
    return {
      cluster: isCluster,
      evalsha: (s, key, args, also) =>
        send(
          key,
          also === undefined
            ? ['EVALSHA', s.sha, '1', key, ...args]
            : ['EVALSHA', s.sha, '2', key, also, ...args],
        ),
      eval: (s, key, args, also) =>
        send(
          key,
          also === undefined
            ? ['EVAL', s.body, '1', key, ...args]
            : ['EVAL', s.body, '2', key, also, ...args],
        ),
      setNx: (key, value, px) => send(key, ['SET', key, value, 'NX', 'PX', String(px), 'GET']),
      time: (key) => send(key, ['TIME']),
      pttl: (key) => send(key, ['PTTL', key]),
      setIfEq: (key, value, expected, px, get) =>
        send(key, ['SET', key, value, 'IFEQ', expected, 'PX', px, ...(get ? ['GET'] : [])]),
      script: (s, keys, args) =>
        sendBuffers(keys[0]!, ['EVALSHA', s.sha, String(keys.length), ...keys, ...args]).catch(
          (err: unknown) => {
            if (!isNoScript(err)) throw err;
            return sendBuffers(keys[0]!, ['EVAL', s.body, String(keys.length), ...keys, ...args]);
          },
        ),
      command: (key, args) => sendBuffers(key, args),
    };
  }
  if (typeof (client as IoRedisLike).evalsha === 'function') {
    const c = client as IoRedisLike;
    return {
      cluster: (client as { isCluster?: unknown }).isCluster === true,
      evalsha: (s, key, args, also) =>
        attempt(() =>
          also === undefined ? c.evalsha(s.sha, 1, key, ...args) : c.evalsha(s.sha, 2, key, also, ...args),
        ),
      eval: (s, key, args, also) =>
        attempt(() =>
          also === undefined ? c.eval(s.body, 1, key, ...args) : c.eval(s.body, 2, key, also, ...args),
        ),
      setNx: (key, value, px) => attempt(() => c.call('SET', key, value, 'PX', String(px), 'NX', 'GET')),
      time: () => attempt(() => c.call('TIME')),
      pttl: (key) => attempt(() => c.call('PTTL', key)),
      setIfEq: (key, value, expected, px, get) =>
        attempt(() => c.call('SET', key, value, 'IFEQ', expected, 'PX', px, ...(get ? ['GET'] : []))),
      script: async (s, keys, args) => {
        if (!c.evalshaBuffer || !c.evalBuffer) return ioBuffers();
        try {
          return await c.evalshaBuffer(s.sha, keys.length, ...keys, ...args);
        } catch (err) {
          if (!isNoScript(err)) throw err;
          return c.evalBuffer(s.body, keys.length, ...keys, ...args);
        }
      },
      // The inbox's plain commands (SADD, SMEMBERS) reply with integers and names, so `call` serves:
      // `callBuffer` must not be used, because with `enableAutoPipelining` ioredis (5 and 6) queues it
      // without its command name (only `call` gets the name put back), and the server answers
      // "unknown command '<key>'".
      command: (_key, [name, ...args]) => attempt(() => c.call(name!, ...args)),
    };
  }
  throw new ConfigError(
    'invalid_option',
    'onceonly: redisStore needs a node-redis client (createClient or createCluster, v5 or later) or an ioredis client (Redis or Cluster) as `client`',
  );
}
