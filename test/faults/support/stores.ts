/**
 * The stores the fault worker opens (Redis, PostgreSQL, MySQL, SQLite and DynamoDB), each with its
 * server's URL and a probe that reaches it, or a server the test starts itself (dynalite): a fault
 * test picks the lines it runs on, and fails (never skips) when a server cannot be reached. What a
 * slow server needs of the runs (fewer events, a longer deadline) is part of its line.
 */
import { after } from 'node:test';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { createClient } from 'redis';
import { reachable, servers } from '../../support/servers.js';
import { FAULT_SIZE, type FleetOptions } from './fleet.js';

export interface FaultStore {
  label: string;
  store: FleetOptions['store'];
  /** The shared server's URL; for a server the test starts (`start`), what the reports name. */
  url: string;
  probe: () => Promise<unknown>;
  /** A server of the test's own, on a free loopback port: started by {@link faultServer}, stopped after the file. */
  start?: () => Promise<{ url: string; stop(): Promise<void> }>;
  /**
   * The fault runs' sizes where the defaults do not suit the server: `events` per FAULT_SIZE
   * (default 60), the share of events whose first attempt is killed (`rate`, default 0.05), and
   * the handler's deadline (`timeoutMs`, default 400; the lease is 4 times it).
   */
  sizes?: { events?: number; rate?: number; timeoutMs?: number };
}

export const FAULT_STORES: readonly FaultStore[] = [
  {
    label: 'Redis',
    store: 'redis',
    url: servers.redis,
    probe: async () => (await createClient({ url: servers.redis }).connect()).quit(),
  },
  {
    label: 'PostgreSQL',
    store: 'postgres',
    url: servers.postgres,
    probe: async () => {
      const c = new pg.Client({ connectionString: servers.postgres });
      await c.connect();
      await c.end();
    },
  },
  {
    label: 'MariaDB',
    store: 'mysql',
    url: servers.mysql,
    probe: async () => (await mysql.createConnection(servers.mysql)).end(),
  },
  { label: 'SQLite', store: 'sqlite', url: 'sqlite', probe: async () => {} },
  {
    label: 'DynamoDB',
    store: 'dynamodb',
    url: 'dynalite (started by the test)',
    probe: async () => {},
    start: async () => {
      const { startDynalite } = await import('../../support/dynalite.js');
      const server = await startDynalite();
      return { url: server.endpoint, stop: () => server.stop() };
    },
    // dynalite answers one request at a time (about 7 ms a write): half the events, killing twice
    // the share of them, and a deadline of 1 s (lease 4 s) rather than 400 ms: on a loaded host a
    // handler whose plain effect waited that long for the ledger passes its deadline just after its
    // effect, is released and runs again (the plain-effect window, not the store's doing).
    sizes: { events: 30, rate: 0.1, timeoutMs: 1_000 },
  },
];

/**
 * The URL a fault test file runs `s` at: a server of its own is started now (a failure to start
 * fails the file) and stopped after the file's tests; a shared one is probed, and undefined when
 * it cannot be reached (a failing test in CI, a skip named on the console elsewhere).
 */
export async function faultServer(s: FaultStore, label: string): Promise<string | undefined> {
  if (s.start) {
    const server = await s.start();
    after(() => server.stop());
    return server.url;
  }
  return (await reachable(label, s.url, s.probe)) ? s.url : undefined;
}

/**
 * A crash suite's fleet settings on `s` at `url`: its kill rate and what every run of the suite
 * shares (the store's own sizes where it has them, else 60 events at a 400 ms deadline, 5% kills).
 */
export function crashFleet(s: FaultStore, url: string) {
  return {
    rate: s.sizes?.rate ?? 0.05,
    common: {
      store: s.store,
      url,
      events: (s.sizes?.events ?? 60) * FAULT_SIZE,
      timeoutMs: s.sizes?.timeoutMs ?? 400,
      workers: 2,
    },
  } as const;
}
