/**
 * One consumer process of a chaos run (see chaos.ts): consumes with the kit's adapter, and per run
 * decides from the message id and the attempt (the same in every process) whether to SIGKILL
 * itself before the effect, throw, or write the effect to the ledger as its last step.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { openStore } from '../../../src/cli/stores.js';
import { servers } from '../../support/servers.js';
import { type ChaosKit, CONSUMER_OPTIONS } from './chaos.js';

const env = (name: string) => {
  const value = process.env[name];
  if (value === undefined) throw new Error(`chaos worker: ${name} is not set`);
  return value;
};
const prefix = env('CHAOS_PREFIX');
const ledger = env('CHAOS_LEDGER');
const killRate = Number(env('CHAOS_KILL_RATE'));
const throwRate = Number(env('CHAOS_THROW_RATE'));

/** A number in [0, 1) from the id and what is decided, the same in every process. */
const chance = (...parts: (string | number)[]) =>
  createHash('sha256').update(parts.join('|')).digest().readUInt32BE(0) / 2 ** 32;

const db = new pg.Pool({ connectionString: servers.postgres, max: 4 });
const note = (id: string, attempt: number, kind: string) =>
  db.query(`INSERT INTO ${ledger} (id, attempt, kind, pid) VALUES ($1, $2, $3, $4)`, [
    id,
    attempt,
    kind,
    process.pid,
  ]);

/** Consumes with the kit module's `kit` until SIGTERM (the entry chaos.ts bundles puts the two together). */
export async function consumeChaos({ kit }: { kit: ChaosKit }): Promise<void> {
  const opened = await openStore(servers.redis, prefix);
  const stop = await kit.consume(
    prefix,
    opened.store,
    async (id, { attempt }) => {
      // At once, mid-handler: the other runs of this process die wherever they are. A killer message
      // kills every run of its own.
      if (id.startsWith('killer-') || (attempt === 1 && chance(id, 'kill') < killRate))
        process.kill(process.pid, 'SIGKILL');
      // A good message throws on its first run only: it must never be dead-lettered (it has
      // maxAttempts - 1 more runs, and twice maxAttempts claims, for the runs a SIGKILL cuts).
      if (id.startsWith('poison-') || (attempt === 1 && chance(id, 'throw') < throwRate)) {
        await note(id, attempt, 'throw');
        throw new Error(`chaos: ${id} refused on attempt ${attempt}`);
      }
      await new Promise((resolve) => setTimeout(resolve, chance(id, attempt, 'ms') * 20));
      await note(id, attempt, 'effect');
    },
    {
      ...CONSUMER_OPTIONS,
      confirmed: (id, attempt) => void note(id, attempt, 'confirmed').catch(() => {}),
      slot: Number(env('CHAOS_SLOT')),
    },
  );

  process.once('SIGTERM', async () => {
    await stop();
    await opened.close();
    await db.end();
    process.exit(0);
  });
}
