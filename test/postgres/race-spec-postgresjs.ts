// Race/crash spec module for test/support/race.ts: the PostgreSQL store over postgres.js.
import { specFor } from './spec-common.js';

export const { open, effects, cleanup } = specFor('postgres.js');
