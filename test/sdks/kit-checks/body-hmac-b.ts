import type { Checks } from './types.js';

export const checks: Checks = {};
