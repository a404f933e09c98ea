/**
 * Where onceonly reports what must not pass unseen (failed runs, store failures, degraded runs,
 * conflicts, lost leases): any object with `warn` and `error`. The console fits, and so do pino,
 * winston and bunyan loggers; `false` silences it.
 */
export interface Logger {
  warn(message: string, ...details: unknown[]): unknown;
  error(message: string, ...details: unknown[]): unknown;
}

/** The logger an option names: the console by default, nothing for `false`. */
export function resolveLogger(option: Logger | false | undefined): Logger | undefined {
  if (option === false) return undefined;
  if (option === undefined) return console;
  if (typeof option !== 'object' || typeof option.warn !== 'function' || typeof option.error !== 'function') {
    throw new TypeError(
      'onceonly: logger must have warn() and error() methods (console, pino, winston...), or be false',
    );
  }
  return option;
}

/** Writes one line at its level; a logger that throws changes nothing else. */
export function emit(
  logger: Logger | undefined,
  level: 'warn' | 'error',
  message: string,
  detail?: unknown,
): void {
  if (!logger) return;
  try {
    if (detail === undefined) logger[level](message);
    else logger[level](message, detail);
  } catch {
    // An observer's bug must not change the outcome.
  }
}

/**
 * The cause of a failure in one short line: `Name: message` (or `code`), newlines folded and cut
 * at 300 characters. Only the error's own text: never a body, header or secret of onceonly's.
 */
export function causeOf(error: unknown): string {
  if (error === undefined) return 'unknown cause';
  let text: string;
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    const message = error.message.replace(/^onceonly: /, '');
    text = `${error.name}${typeof code === 'string' && !message.includes(code) ? ` [${code}]` : ''}: ${message}`;
  } else {
    text = String(error);
  }
  text = text.replace(/\s*\n\s*/g, ' ');
  return text.length > 300 ? `${text.slice(0, 297)}...` : text;
}
