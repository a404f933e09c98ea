import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { ConfigError } from '../errors.js';
import { parseDuration, parsePositiveDuration } from './duration.js';

describe('parseDuration', () => {
  it('reads every unit and plain milliseconds', () => {
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration('120s'), 120_000);
    assert.equal(parseDuration('15m'), 900_000);
    assert.equal(parseDuration('24h'), 86_400_000);
    assert.equal(parseDuration('3d'), 259_200_000);
    assert.equal(parseDuration('1.5s'), 1_500);
    assert.equal(parseDuration(250), 250);
    assert.equal(parseDuration(0), 0);
  });

  it('refuses anything else with an error naming the option and the value', () => {
    for (const bad of [
      '',
      '1',
      '1 h',
      '1hour',
      '1h30m',
      '-5s',
      'ms',
      '5S',
      ' 5s',
      '5s ',
      '1e3ms',
      'Infinityms',
    ]) {
      assert.throws(
        () => parseDuration(bad, 'lease'),
        (err: unknown) =>
          err instanceof ConfigError &&
          err.code === 'invalid_duration' &&
          err.message.includes('lease') &&
          err.message.includes(JSON.stringify(bad)),
        `should refuse ${JSON.stringify(bad)}`,
      );
    }
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, null, undefined, {}]) {
      assert.throws(() => parseDuration(bad as never, 'timeout'), ConfigError);
    }
  });

  it('requires positive durations where zero makes no sense', () => {
    assert.throws(() => parsePositiveDuration('0s', 'lease'), /lease must be longer than 0 ms/);
    assert.equal(parsePositiveDuration('1ms', 'lease'), 1);
  });
});
