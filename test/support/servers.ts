/**
 * Database suites run against real servers. In CI (CI=true) an unreachable server fails the run;
 * elsewhere the suite is skipped with a notice that names the server it looked for.
 */
import { describe, it } from 'node:test';

export const servers = {
  redis: process.env.ONCEONLY_REDIS_URL ?? 'redis://127.0.0.1:6379',
  postgres: process.env.ONCEONLY_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  mysql: process.env.ONCEONLY_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test',
  amqp: process.env.ONCEONLY_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
  nats: process.env.ONCEONLY_NATS_URL ?? 'nats://127.0.0.1:4222',
  mqtt: process.env.ONCEONLY_MQTT_URL ?? 'mqtt://127.0.0.1:1883',
} as const;

export const inCI = process.env.CI === 'true' || process.env.CI === '1';

/**
 * Probes a server. Returns true when reachable. When not: in CI registers a failing test naming the
 * server (so the run is red, never silently skipped); outside CI prints a visible notice and returns
 * false so the caller registers nothing.
 */
export async function reachable(label: string, url: string, probe: () => Promise<unknown>): Promise<boolean> {
  try {
    await withTimeout(probe(), 5_000);
    return true;
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    if (inCI) {
      describe(`${label} (${url})`, () => {
        it('is reachable', () => {
          throw new Error(`onceonly tests: ${label} at ${url} is unreachable in CI: ${why}`);
        });
      });
    } else {
      console.warn(
        `\n*** SKIPPED ${label}: no server at ${url} (${why}). Start it, or set CI=true to make this fail. ***\n`,
      );
    }
    return false;
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}
