/**
 * Conformance suites side by side. A conformance run is about 15 s of timers (leases left to run
 * out, heartbeats over three lease lengths) and well under a second of CPU: a file that runs one
 * per client one after another waits a minute and a half for nothing. Under one parent they
 * overlap: each suite's cases still run one at a time, in the order declared, and the suites stay
 * apart by their key prefixes, as they would on a server shared with other apps.
 */
import { describe, it } from 'node:test';
import type { TestRunner } from '../../src/testing/index.js';

/** A runner for runConformance / runInboxConformance whose suite runs its cases one at a time. */
const oneAtATime: TestRunner = {
  describe: (name, body) => describe(name, { concurrency: 1 }, body),
  it: (name, body) => it(name, body),
};

/**
 * Declares the suites `declare` registers (with the runner it is handed) under one parent suite
 * named `name`, all of them started at once.
 */
export function sideBySide(name: string, declare: (runner: TestRunner) => Promise<unknown>[]): void {
  describe(name, { concurrency: true }, async () => {
    await Promise.all(declare(oneAtATime));
  });
}
