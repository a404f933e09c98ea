#!/usr/bin/env node
/**
 * The onceonly command line: `demo`, `simulate`, `inspect`, `inbox`, `example` and `console`. Errors are one line; `--help` on
 * every command; `--json` for machine-readable output.
 */
import { readFileSync } from 'node:fs';
import { UsageError } from './args.js';

/** The installed package's version: package.json is two folders up from src/cli and dist/cli alike. */
function version(): string {
  return (
    JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
  ).version;
}

const HELP = `usage: onceonly <command> [flags]

commands:
  demo       prove effectively-once under at-least-once chaos (workers, crashes, duplicates, retries)
  simulate   fire the same delivery pattern at your own receiver
  send       send one delivery signed as a provider signs it (stripe, github, shopify, ...)
  sign       print the headers a provider would sign a body with, or a whole curl command
  inspect    show one key, counts by state and stuck leases in a store; purge expired rows
  inbox      counts, dead entries and the oldest due entry of a store's inbox; list, show, retry, purge
  example    the quick start over real HTTP; --serve then prints a signed curl to send by hand
  console    the operator's console in a browser, on 127.0.0.1: the inbox, its entries, requeue, purge

Run onceonly <command> --help for its flags; onceonly --version prints the version.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'demo':
      return (await import('./demo.js')).demo(rest);
    case 'simulate':
      return (await import('./simulate-command.js')).simulateCommand(rest);
    case 'send':
      return (await import('./send.js')).sendCommand(rest);
    case 'sign':
      return (await import('./send.js')).signCommand(rest);
    case 'inspect':
      return (await import('./inspect.js')).inspect(rest);
    case 'inbox':
      return (await import('./inbox.js')).inboxCommand(rest);
    case 'example':
      return (await import('./example.js')).example(rest);
    case 'console':
      return (await import('./console.js')).consoleCommand(rest);
    case '--version':
    case '-v':
    case 'version':
      console.log(version());
      return 0;
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      console.log(HELP);
      return command === undefined ? 1 : 0;
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}; try onceonly --help`);
  }
}

// Exit once the output is flushed: a command is done when it returns, whatever handles a driver or
// node:cluster still holds (a killed worker's connections can keep the primary's loop alive).
function exit(code: number): void {
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

main(process.argv.slice(2)).then(exit, (error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  console.error(`onceonly: ${message.replace(/^onceonly: /, '')}`);
  exit(error instanceof UsageError ? 2 : 1);
});
