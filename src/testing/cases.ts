/**
 * The claim-store conformance cases, in the order they run, from their parts by concern
 * (cases/*.ts), with the heartbeat's cases last.
 */
import { randomBytes } from 'node:crypto';
import { acquireCases } from './cases/acquire.js';
import { confirmCases } from './cases/confirm.js';
import { keyCases } from './cases/keys.js';
import { ownerCases } from './cases/owners.js';
import { recordCases } from './cases/record.js';
import { releaseCases } from './cases/release.js';
import { retakeCases } from './cases/retake.js';
import type { ConformanceCase } from './cases/shared.js';
import { stepCases } from './cases/steps.js';
import { heartbeatCases } from './heartbeat-cases.js';

export type { CaseContext, ConformanceCase } from './cases/shared.js';

/**
 * The cases every store must pass. Each names the behaviour it proves; `runConformance` registers
 * them with your test runner. They are exported so a failing case can be run on its own.
 */
export const conformanceCases: readonly ConformanceCase[] = [
  ...acquireCases,
  ...ownerCases,
  ...releaseCases,
  ...retakeCases,
  ...confirmCases,
  ...recordCases,
  ...keyCases,
  ...stepCases,
  ...heartbeatCases,
];

/** A prefix unique to this process and run. */
export function runPrefix(): string {
  return `oo-conf-${randomBytes(4).toString('hex')}`;
}
