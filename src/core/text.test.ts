import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { hasUnsafe, inertLines, oneLine } from './text.js';

describe('oneLine: text from outside, safe on one line of a terminal or log', () => {
  it('escapes ESC (CSI and OSC sequences), BEL, CR, LF, tab, NUL, DEL and C1 controls visibly', () => {
    const hostile = 'a\x1b[2Jb\x1b]0;owned\x07c\rd\ne\tf\x00g\x7fh\x9bi';
    const safe = oneLine(hostile);
    assert.equal(safe, 'a\\x1b[2Jb\\x1b]0;owned\\x07c\\rd\\ne\\tf\\x00g\\x7fh\\x9bi');
    assert.equal(hasUnsafe(safe), false);
  });

  it('escapes the line and paragraph separators and the bidi overrides and isolates', () => {
    assert.equal(
      oneLine('x\u2028y\u2029z\u202eevil\u2066i\u2069\u200e\u200f'),
      'x\\u2028y\\u2029z\\u202eevil\\u2066i\\u2069\\u200e\\u200f',
    );
  });

  it('leaves ordinary text, accents, emoji and CJK alone (the same string back)', () => {
    const text = 'café – 😀 中文 "quoted" back\\slash';
    assert.equal(oneLine(text), text);
    assert.equal(hasUnsafe(text), false);
  });

  it('inertLines keeps newlines and escapes the rest', () => {
    assert.equal(inertLines('Error: x\x1b[31m\n    at y\r'), 'Error: x\\x1b[31m\n    at y\\r');
  });
});

describe('inertJson', () => {
  it('is the same JSON to a parser, with DEL, C1, separators and bidi controls escaped', async () => {
    const { inertJson } = await import('./text.js');
    const value = { a: 'x\u2028y\u202ez\x7f\x9b\x1b', b: [1, 'ok'] };
    const text = inertJson(value, 2);
    assert.equal(hasUnsafe(text.replaceAll('\n', '')), false);
    assert.deepEqual(JSON.parse(text), value);
  });
});
