import { ConfigError } from './errors.js';

/**
 * A length of time: a number of milliseconds, or a string such as `'500ms'`, `'120s'`, `'15m'`,
 * `'24h'` or `'3d'` (one non-negative number, one unit, no spaces).
 */
export type Duration = number | `${number}${'ms' | 's' | 'm' | 'h' | 'd'}`;

const unitMs = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const pattern = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;

/**
 * Parses a {@link Duration} strictly into whole milliseconds. Anything else (negative, `NaN`,
 * `'1 h'`, `'1hour'`, `'1h30m'`) throws a {@link ConfigError} that names the option and the value.
 *
 * @example parseDuration('15m') // 900000
 */
export function parseDuration(value: Duration | string, name = 'duration'): number {
  let ms: number;
  if (typeof value === 'number') {
    ms = value;
  } else if (typeof value === 'string') {
    const match = pattern.exec(value);
    if (!match) throw invalid(name, value);
    ms = Number(match[1]) * unitMs[match[2] as keyof typeof unitMs];
  } else {
    throw invalid(name, value);
  }
  if (!Number.isFinite(ms) || ms < 0 || ms > Number.MAX_SAFE_INTEGER) throw invalid(name, value);
  return Math.round(ms);
}

/** Like {@link parseDuration}, and the result must be at least 1 ms. */
export function parsePositiveDuration(value: Duration | string, name: string): number {
  const ms = parseDuration(value, name);
  if (ms < 1)
    throw new ConfigError(
      'invalid_duration',
      `onceonly: ${name} must be longer than 0 ms, got ${show(value)}`,
    );
  return ms;
}

function invalid(name: string, value: unknown): ConfigError {
  return new ConfigError(
    'invalid_duration',
    `onceonly: ${name} must be a number of milliseconds or a string like '500ms', '120s', '15m', '24h', '3d'; got ${show(value)}`,
  );
}

function show(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}
