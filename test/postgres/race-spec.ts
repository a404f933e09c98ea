// Race/crash spec module for test/support/race.ts: the PostgreSQL store over a `pg` Pool.
import { specFor } from './spec-common.js';

export const { open, effects, cleanup } = specFor('pg');
