/**
 * The Redis store's claims: claim (the fast `SET NX PX GET`, a live lease told by its token or one
 * `PTTL`, else the claim script), confirm (native `SET ... IFEQ` when the server has it, else the
 * script), release, extend, record, advance, inspect, durable steps and the health report, over the
 * parts kept apart: the wire (wire.ts), the server's clock (clock.ts), native compare-and-set
 * (cas.ts), the values (values.ts), the steps hash's name (slots.ts) and the checks (checks.ts).
 */
import { newToken } from '../../core/crypto.js';
import type { HealthCheck, StoreHealth } from '../../core/health.js';
import { storeKey } from '../../core/keys.js';
import { leaseNow } from '../../core/timers.js';
import {
  assertVersion,
  type Claim,
  type ClaimOptions,
  createLease,
  type Lease,
  type RecordOptions,
  type RecordView,
} from '../../core/types.js';
import { StoreUnavailableError } from '../../errors.js';
import { NativeCas } from './cas.js';
import { checkEvictionPolicy, redisHealth } from './checks.js';
import { ServerClock } from './clock.js';
import { connectionCounter } from './connection.js';
import { redisFailure } from './failure.js';
import { stepsKeyOf } from './slots.js';
import { clientPrefixOf, mayHaveSteps, redisSteps } from './steps.js';
import {
  claimWritten,
  confirmBound,
  duration,
  fingerprintField,
  MAX_MS,
  owned,
  ownerId,
  parseView,
  REFUSED,
  sameField,
  TOKEN_END,
  tooLate,
  VALUE,
  type Written,
} from './values.js';
import { isNoScript, type RedisClientLike, type Script, scripts, serverError, type Wire } from './wire.js';

/**
 * How far past the latest the server's now can be (this process's reading of its clock plus that
 * reading's round trip) the lease end a token carries must lie for a claim to answer "in flight" on
 * it alone: room for the clocks' rates to differ. Nearer the end, the claim asks the key's `PTTL`.
 */
const LIVE_MARGIN_MS = 1_000;

export interface RedisClaimsOptions {
  wire: Wire;
  client: RedisClientLike;
  prefix: string;
  minGraceMs: number;
  warn: (message: string) => void;
  /** False when the eviction policy is not to be checked. */
  checkEvictionPolicy: boolean;
}

export class RedisClaims {
  readonly #wire: Wire;
  readonly #client: RedisClientLike;
  readonly #prefix: string;
  readonly #minGraceMs: number;
  readonly #warn: (message: string) => void;
  #policyChecked: boolean;
  // SET NX together with GET needs Redis 7 / Valkey 7.2; on older servers every claim is a script.
  #fastClaims = true;
  readonly #clock: ServerClock;
  readonly #cas: NativeCas;
  /** What each lease's claim wrote, for its confirm (see values.ts `Written`). */
  readonly #written = new WeakMap<Lease, Written>();
  readonly #clientPrefix: string;

  constructor(options: RedisClaimsOptions) {
    this.#wire = options.wire;
    this.#client = options.client;
    this.#prefix = options.prefix;
    this.#minGraceMs = options.minGraceMs;
    this.#warn = options.warn;
    this.#policyChecked = !options.checkEvictionPolicy;
    this.#clientPrefix = clientPrefixOf(options.client);
    const connectionCount = options.wire.cluster ? undefined : connectionCounter(options.client);
    this.#cas = new NativeCas(options.wire, `${options.prefix}k:~cas-probe`, connectionCount);
    // The first reading also asks whether the server compares and sets natively: in the same trip
    // (and so does the first after a reconnect).
    this.#clock = new ServerClock(options.wire, connectionCount, () => {
      if (this.#cas.answer() === undefined && !this.#cas.asking) void this.#cas.probe();
    });
  }

  // Any string is a key: long or unprintable ones are hashed losslessly (core/keys.ts), so two
  // ids UTF-8 would merge (lone surrogates) stay two keys, as on every store.
  claimKey(key: string): string {
    return `${this.#prefix}k:${storeKey(key)}`;
  }

  /** The steps hash of a claim key, in its slot (slots.ts); of a lease's, only if it may have steps. */
  #stepsKey(claimKey: string, lease?: Lease): string | undefined {
    return lease && !mayHaveSteps(lease) ? undefined : stepsKeyOf(claimKey, this.#clientPrefix);
  }

  /** A script over the claim key of `key` and its steps hash. */
  #onSteps(what: string, s: Script, key: string, args: string[]): Promise<unknown> {
    const claimKey = this.claimKey(key);
    return this.#call(what, s, claimKey, args, undefined, this.#stepsKey(claimKey));
  }

  #versionKey(entity: string): string {
    return `${this.#prefix}v:${storeKey(entity)}`;
  }

  failure = (what: string, err: unknown): StoreUnavailableError => redisFailure(this.#prefix, what, err);

  /** After any answer from the server: ask about native compare-and-set, check the eviction policy. */
  afterFirstAnswer = (): void => {
    this.#cas.askIfUnknown();
    if (!this.#policyChecked) {
      this.#policyChecked = true;
      // After the first answer, so a lazily connecting cluster client knows its nodes. Not awaited:
      // the check must never slow down or fail a delivery.
      checkEvictionPolicy(this.#client, this.#warn).catch(() => {});
    }
  };

  #answered = (reply: unknown): unknown => {
    this.afterFirstAnswer();
    return reply;
  };

  /** A script by its body (EVAL): one command, whatever the server has loaded. */
  #byBody(what: string, s: Script, key: string, args: string[], also?: string): Promise<unknown> {
    return this.#wire.eval(s, key, args, also).then(this.#answered, (err: unknown) => {
      throw this.failure(what, err);
    });
  }

  /**
   * A script by EVALSHA; on NOSCRIPT (never loaded, SCRIPT FLUSH, failover) by EVAL, which caches
   * it. One handler pair on the common path: this runs for every confirm on Redis 7. The EVAL is a
   * second command, refused past `notAfter` (on `leaseNow()`'s clock) when one is given. `also`:
   * the key's steps hash, when the script takes it.
   */
  #call(what: string, s: Script, key: string, args: string[], notAfter?: number, also?: string) {
    return this.#wire.evalsha(s, key, args, also).then(this.#answered, (err: unknown) => {
      if (!isNoScript(err)) throw this.failure(what, err);
      if (notAfter !== undefined && leaseNow() >= notAfter) {
        throw tooLate('the server had not loaded the confirm script (NOSCRIPT)');
      }
      return this.#byBody(what, s, key, args, also);
    });
  }

  // Not an async function: the fast claim's promise is handed back as it is (no second promise
  // and tick around it on every delivery); nothing here may throw (a bad option rejects).
  claim(key: string, options: ClaimOptions): Promise<Claim> {
    try {
      const { leaseMs, fingerprint, retentionMs } = options;
      const lease = duration(leaseMs, 'leaseMs');
      const g = this.#grace(lease, retentionMs);
      // The owner id, and after it the lease's end as the server's clock will have it at the SET
      // at the earliest (this process's reading of that clock is never ahead of it): a later claim
      // that finds the key answers "in flight" on it without asking the key's PTTL.
      const now = performance.now();
      const offset = this.#clock.offset;
      const token =
        offset === undefined || this.#clock.ceiling(now) === undefined
          ? newToken()
          : `${newToken()}.${Math.floor(now + offset) + lease}`;
      const fp = fingerprintField(fingerprint);
      return this.#fastClaims
        ? this.#fastClaim(key, token, g, fp, lease, fingerprint)
        : this.#scriptClaim(key, token, lease, g, fp, fingerprint);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * The claim of a key nobody holds: one plain SET NX PX, with GET so a completed key is answered in
   * the same trip, and a live lease by a PTTL. The claim script decides where this cannot (a
   * released or run-out key, or a server too old for SET NX GET).
   */
  async #fastClaim(
    userKey: string,
    token: string,
    g: number,
    fp: string,
    leaseMs: number,
    fingerprint: string | undefined,
  ): Promise<Claim> {
    const key = this.claimKey(userKey);
    const clock = this.#clock;
    // Read just before the SET goes out: the lease end it gives errs early, by no more than the
    // SET's trip out (a first claim's one-time costs before this point must not widen that).
    const sentAt = performance.now();
    const boundFrom = leaseNow();
    const reading = clock.due(sentAt) ? clock.read(key) : undefined;
    const value = `p|${token}|1|${g}|${leaseMs + g}|${fp}`;
    let held: unknown;
    try {
      held = await this.#wire.setNx(key, value, leaseMs + g);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (/syntax error/i.test(message)) {
        this.#fastClaims = false;
        return this.#scriptClaim(userKey, token, leaseMs, g, fp, fingerprint);
      }
      throw this.failure('claim', err);
    }
    this.afterFirstAnswer();
    if (held === null || held === undefined) {
      if (clock.offset === undefined) await reading;
      const expiresAt =
        clock.offset !== undefined
          ? Math.floor(sentAt + clock.offset) + leaseMs
          : await this.#expiryByScript(key, g);
      const lease = createLease({
        key: userKey,
        token,
        attempt: 1,
        fingerprint,
        expiresAt: new Date(expiresAt),
      });
      this.#written.set(lease, claimWritten(value, fp, boundFrom, leaseMs));
      return { status: 'acquired', lease };
    }
    const fields = VALUE.exec(String(held));
    if (fields?.[1] === 'c') return { status: 'completed', sameFingerprint: sameField(fields[6]!, fp) };
    if (fields?.[1] === 'p') {
      const live = await this.#liveLease(key, fields, fp);
      if (live) return live;
    }
    return this.#scriptClaim(userKey, token, leaseMs, g, fp, fingerprint);
  }

  /** TIME failed: the key is ours, the script reads its expiry. */
  async #expiryByScript(key: string, g: number): Promise<number> {
    const reply = (await this.#call('claim', scripts.inspect, key, [])) as [string, number] | null;
    if (!reply) {
      throw new StoreUnavailableError(
        `onceonly: Redis claim failed: the key it had just claimed was gone at once; check the server's maxmemory-policy (noeviction) and what else deletes keys under the prefix`,
      );
    }
    return Number(reply[1]) - g;
  }

  /** The claim script: takeover of a released or run-out key, or in flight, or completed. */
  async #scriptClaim(
    key: string,
    token: string,
    lease: number,
    g: number,
    fp: string,
    fingerprint: string | undefined,
  ): Promise<Claim> {
    const sentAt = leaseNow();
    const args = [token, String(lease), String(g), fp, String(lease + g)];
    const reply = (await this.#onSteps('claim', scripts.claim, key, args)) as number[];
    const [status, a, b, c] = reply.map(Number);
    if (status === 1) {
      const acquired = createLease({ key, token, attempt: a!, fingerprint, expiresAt: new Date(b!) });
      // What the script wrote, field for field.
      this.#written.set(acquired, claimWritten(`p|${token}|${a}|${g}|${lease + g}|${fp}`, fp, sentAt, lease));
      return { status: 'acquired', lease: acquired };
    }
    if (status === 2) {
      return { status: 'in-flight', attempt: a!, expiresAt: new Date(b!), sameFingerprint: c === 1 };
    }
    return { status: 'completed', sameFingerprint: a === 1 };
  }

  /**
   * A processing key found by the fast claim: in flight when its lease is live, told by the lease
   * end its token carries when that lies surely ahead, else by one PTTL
   * (live ⇔ PTTL > the grace it was written with, the script's own test) instead of the claim
   * script. Not atomic with the SET that read the value, so only "live" is concluded here, and every
   * way the key can change in between makes that answer late, never wrong in the costly direction:
   * a lease confirmed or taken over meanwhile is still reported in flight (the sender retries and
   * finds it done or running); a lease released or run out goes to the script, which decides on
   * the key as it is then. Undefined: let the script decide.
   */
  async #liveLease(key: string, fields: RegExpExecArray, fp: string): Promise<Claim | undefined> {
    // Released (no owner): the script takes it over or refuses it.
    if (fields[2] === '' || this.#clock.offset === undefined) return undefined;
    const inFlight = (expiresAt: number): Claim => ({
      status: 'in-flight',
      attempt: Number(fields[3]),
      expiresAt: new Date(expiresAt),
      sameFingerprint: sameField(fields[6]!, fp),
    });
    // The lease end the claim wrote after its owner id: never later than the key's own, so a lease
    // whose end lies surely ahead of the server's now was live when the SET read it. No PTTL needed.
    const carried = TOKEN_END.exec(fields[2]!);
    const ceiling = carried ? this.#clock.ceiling() : undefined;
    if (carried && ceiling !== undefined) {
      const end = Number(carried[1]);
      if (end - ceiling > LIVE_MARGIN_MS) return inFlight(end);
    }
    const grace = Number(fields[4]);
    let pttl: number;
    try {
      pttl = Number(await this.#wire.pttl(key));
    } catch (err) {
      throw this.failure('claim', err);
    }
    if (!(pttl > grace)) return undefined;
    // The lease's end on the server's clock, as the script reports it (expiry minus grace), from
    // this process's reading of that clock.
    return inFlight(Math.floor(performance.now() + this.#clock.offset) + pttl - grace);
  }

  /** How long the key outlives its lease: the claim's retentionMs, else leaseGrace (at least the lease). */
  #grace(leaseMs: number, retentionMs: number | undefined): number {
    if (retentionMs !== undefined) return duration(retentionMs, 'retentionMs');
    return Math.min(Math.max(leaseMs, this.#minGraceMs), MAX_MS);
  }

  async confirm(lease: Lease, { retentionMs }: { retentionMs: number }): Promise<boolean> {
    // No real token is empty ('' marks a released record, which nobody owns) or holds the field
    // separator. The completed record keeps the owner id (a repeated confirm finds it).
    const id = ownerId(lease.token);
    if (id === undefined) return false;
    const retention = String(duration(retentionMs, 'retentionMs'));
    const key = this.claimKey(lease.key);
    const done = `c|${id}|${lease.attempt}|0|${retention}|${fingerprintField(lease.fingerprint)}`;
    const held = this.#written.get(lease);
    // While the lease is surely live, a command after the first must go out before its end (a
    // takeover, its release and that record's expiry could come first, and a late write would turn
    // the retry away as a duplicate). A confirm called later (or of a lease this store did not hand
    // out) is the script, as on Redis 7.
    const notAfter = held !== undefined && leaseNow() < held.bound ? held.bound : undefined;
    const claimed = notAfter === undefined ? undefined : held?.value;
    // Steps, if the key may have them, go in the same script (a native SET cannot delete them).
    const steps = this.#stepsKey(key, lease);
    if (claimed !== undefined && steps === undefined && this.#cas.answer() === true) {
      const verdict = await this.#nativeConfirm(key, done, claimed, retention, id, notAfter!);
      if (verdict !== undefined) {
        // Completed (now or before): a repeated confirm goes to the script, which finds our id.
        if (verdict) this.#written.delete(lease);
        return verdict;
      }
    }
    // On Redis 7 the script makes that comparison itself, in the same call (one command, sent
    // while the lease is live); past a native miss it decides by the owner id. A confirm with no
    // live lease it knows of sends the script's body: one command whatever the server has loaded
    // (an EVALSHA's NOSCRIPT would make the EVAL a second one, with nothing to bound it).
    const args = claimed === undefined ? [id, done, retention] : [id, done, retention, claimed];
    const reply =
      notAfter === undefined
        ? await this.#byBody('confirm', scripts.confirm, key, args, steps)
        : await this.#call('confirm', scripts.confirm, key, args, notAfter, steps);
    const confirmed = Number(reply) === 1;
    if (confirmed) this.#written.delete(lease);
    return confirmed;
  }

  /**
   * The key still holds what the claim wrote: ours, untouched since. The SET answers what the key
   * held, so a miss is mostly decided by that one command too. Undefined: the script decides (the
   * key vanished, holds our lease renewed, or the server refused the SET), if it can still be sent
   * in time.
   */
  async #nativeConfirm(
    key: string,
    done: string,
    claimed: string,
    retention: string,
    id: string,
    notAfter: number,
  ): Promise<boolean | undefined> {
    let was: unknown;
    try {
      was = await this.#wire.setIfEq(key, done, claimed, retention, true);
    } catch (err) {
      // The server refused it: the script gives the answer (or the error) it always gave. A
      // node without IFEQ (a cluster mid-upgrade) says "syntax error": the script from now on.
      if (!serverError(err)) throw this.failure('confirm', err);
      if (/syntax/i.test((err as Error).message)) this.#cas.native = false;
      was = REFUSED;
    }
    if (was !== REFUSED) {
      const verdict = was === null || was === undefined ? undefined : owned(String(was), id, claimed);
      if (verdict !== undefined) return verdict;
    }
    // The key vanished (invariant 3: completed all the same), holds our lease renewed, or the
    // server refused the SET: the script decides, if it can still be sent in time.
    if (leaseNow() >= notAfter) {
      throw tooLate(
        was === REFUSED
          ? 'the server refused SET ... IFEQ'
          : 'the key no longer held what the claim wrote (it vanished, or the lease was renewed meanwhile)',
      );
    }
    return undefined;
  }

  async release(lease: Lease): Promise<boolean> {
    this.#written.delete(lease);
    const id = ownerId(lease.token);
    if (id === undefined) return false;
    const key = this.claimKey(lease.key);
    return (
      Number(
        await this.#call('release', scripts.release, key, [id], undefined, this.#stepsKey(key, lease)),
      ) === 1
    );
  }

  async extend(lease: Lease, { leaseMs }: { leaseMs: number }): Promise<boolean> {
    const ms = duration(leaseMs, 'leaseMs');
    const id = ownerId(lease.token);
    if (id === undefined) return false;
    // A renewal rewrites the key (a new lease end): its confirm goes to the script. Until the
    // answer, and if it fails, the lease ends at the earlier of the two ends (the renewal may have
    // landed, with a shorter lease); once renewed, at the new one.
    const sentAt = leaseNow();
    const renewedBound = confirmBound(sentAt, ms);
    const before = this.#written.get(lease);
    if (before !== undefined) {
      this.#written.set(lease, { value: undefined, bound: Math.min(before.bound, renewedBound) });
    }
    const key = this.claimKey(lease.key);
    const steps = this.#stepsKey(key, lease);
    const reply = await this.#call('extend', scripts.extend, key, [id, String(ms)], undefined, steps);
    const renewed = Number(reply) === 1;
    if (renewed && before !== undefined) this.#written.set(lease, { value: undefined, bound: renewedBound });
    return renewed;
  }

  async record(key: string, { retentionMs, fingerprint }: RecordOptions): Promise<{ duplicate: boolean }> {
    const reply = await this.#onSteps('record', scripts.record, key, [
      newToken(),
      String(duration(retentionMs, 'retentionMs')),
      fingerprintField(fingerprint),
    ]);
    return { duplicate: Number(reply) === 1 };
  }

  /** The steps of a lease's key (see steps.ts). */
  readonly steps = redisSteps({
    save: scripts.saveStep,
    load: scripts.loadSteps,
    owner: (lease) => ownerId(lease.token),
    run: (what, s, lease, args) => this.#onSteps(what, s, lease.key, args),
  });

  async advance(entity: string, version: number): Promise<boolean> {
    assertVersion(version);
    return (
      Number(await this.#call('advance', scripts.advance, this.#versionKey(entity), [String(version)])) === 1
    );
  }

  async inspect(key: string): Promise<RecordView | undefined> {
    const reply = (await this.#call('inspect', scripts.inspect, this.claimKey(key), [])) as
      | [string, number]
      | null;
    if (!reply) return undefined;
    return parseView(key, String(reply[0]), Number(reply[1]));
  }

  /**
   * Reachable, the server's clock, a `maxmemory-policy` that cannot evict keys, scripts that run,
   * and which confirm runs (`compare-and-set`: native or Lua).
   */
  async health(): Promise<StoreHealth> {
    const health = await redisHealth(this.#wire, this.#client, this.claimKey('~health'));
    if (this.#cas.answer() === undefined) await this.#cas.probe();
    // Scripts must run (release, extend, takeovers, record; every confirm on Redis 7): a server
    // or ACL that refuses them would otherwise show only on those paths.
    let scriptsCheck: HealthCheck;
    try {
      await this.#call('health check', scripts.inspect, this.claimKey('~health'), []);
      scriptsCheck = { name: 'scripts', ok: true, detail: 'Lua scripts run' };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      scriptsCheck = { name: 'scripts', ok: false, detail: message.slice(0, 300) };
    }
    const native = this.#cas.native;
    const check: HealthCheck = {
      name: 'compare-and-set',
      ok: true,
      detail:
        native === true
          ? 'native: confirm is one SET ... IFEQ'
          : native === false
            ? 'Lua: confirm is a script (the server has no SET ... IFEQ: Redis before 8.4, Valkey before 8.1)'
            : 'not known yet: confirm is a script until the server answers',
    };
    return { ...health, checks: [...health.checks, scriptsCheck, check] };
  }
}
