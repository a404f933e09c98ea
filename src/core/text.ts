/**
 * Text from outside (an event type, a handler error quoting event content, a stored header, an id)
 * made safe to print on one line of a log or a terminal. Every character that a terminal or a log
 * reader acts on rather than shows is written as a visible escape: C0 controls (newline, carriage
 * return, ESC that starts ANSI/CSI and OSC sequences, BEL...), DEL, C1 controls (U+0080-U+009F, 8-bit
 * CSI among them), the line and paragraph separators U+2028/U+2029 (new lines to JavaScript and
 * some log viewers), and the bidirectional overrides and isolates that reorder what is shown
 * (U+200E/U+200F, U+202A-U+202E, U+2066-U+2069). So a signed event cannot clear an operator's
 * screen, retitle the terminal, or fake a line of output or of a log.
 */

// One character class for the test and the replacement: ordinary text pays one failed match.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it finds.
const UNSAFE = /[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: as above.
const UNSAFE_ALL = /[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: as above, newlines kept.
const UNSAFE_BUT_NEWLINE = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeChar(char: string): string {
  const named = NAMED[char];
  if (named !== undefined) return named;
  const code = char.charCodeAt(0);
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}

const UNSAFE_BUT_NEWLINE_ONE = new RegExp(UNSAFE_BUT_NEWLINE.source);

/** Whether the text holds a character {@link inertLines} would escape (a line break is fine). */
export function hasUnsafeButNewline(text: string): boolean {
  return UNSAFE_BUT_NEWLINE_ONE.test(text);
}

/** Whether the text holds a character {@link oneLine} would escape. */
export function hasUnsafe(text: string): boolean {
  return UNSAFE.test(text);
}

/**
 * The text with every control, separator and bidi-override character escaped (`\x1b`, `\n`,
 * `\u2028`), so it prints as one inert line. Text without one comes back as it is.
 */
export function oneLine(text: string): string {
  return UNSAFE.test(text) ? text.replace(UNSAFE_ALL, escapeChar) : text;
}

/** As {@link oneLine}, keeping plain newlines (`\n`): for a stack trace, printed line by line. */
export function inertLines(text: string): string {
  return UNSAFE.test(text) ? text.replace(UNSAFE_BUT_NEWLINE, escapeChar) : text;
}

// What JSON.stringify leaves raw of the characters above: DEL, C1, the separators and bidi controls.
const RAW_IN_JSON = /[\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * `JSON.stringify(value, null, space)` with every character {@link oneLine} escapes written as a JSON
 * `\uXXXX` escape (JSON.stringify escapes C0 controls itself, not DEL, C1, U+2028 or bidi
 * overrides): the same JSON to a parser, inert on a terminal.
 */
export function inertJson(value: unknown, space?: number): string {
  return JSON.stringify(value, null, space).replace(
    RAW_IN_JSON,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
