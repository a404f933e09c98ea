/**
 * A node-redis client that records the name of each command it sends, through a proxy (as
 * node-redis's own withTypeMapping makes), for tests that assert which commands the Redis store sent.
 */
import type { NodeRedisLike } from '../../src/stores/redis.js';

type Client = Pick<NodeRedisLike, 'evalSha'> & { sendCommand(args: string[]): PromiseLike<unknown> };

export interface RecordingOptions {
  /**
   * Name every script run `script`: EVALSHA, and the EVAL after it on NOSCRIPT (a fresh server) as
   * the same one run. Without it each is named as sent.
   */
  scripts?: boolean;
  /** What the server is sent instead of the store's own arguments (a server that drops an option). */
  rewrite?: (args: string[]) => string[];
  /**
   * Holds a command's reply back until this `performance.now()` instant (a slow network, a paused
   * process): for tests of what a store sends after a late answer.
   */
  replyAt?: (args: string[]) => number | undefined;
}

/** The client, naming each command it sends in `sent`; a SET ... IFEQ is told from a plain SET. */
export function recording(client: Client, sent: string[], options: RecordingOptions = {}): NodeRedisLike {
  const proxy = Object.create(client) as NodeRedisLike;
  proxy.sendCommand = ((args: string[]) => {
    const name = args[0] === 'SET' && args.includes('IFEQ') ? 'SET IFEQ' : args[0]!;
    if (!options.scripts) sent.push(name);
    else if (name !== 'EVAL' || sent.at(-1) !== 'script')
      sent.push(name.startsWith('EVAL') ? 'script' : name);
    const reply = client.sendCommand(options.rewrite ? options.rewrite(args) : args);
    const at = options.replyAt?.(args);
    if (at === undefined) return reply;
    const held = (settle: () => void) => setTimeout(settle, Math.max(0, at - performance.now()));
    return Promise.resolve(reply).then(
      (value) => new Promise((resolve) => held(() => resolve(value))),
      (error: unknown) => new Promise((_, reject) => held(() => reject(error))),
    );
  }) as NodeRedisLike['sendCommand'];
  return proxy;
}
