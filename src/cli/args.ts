/** A small strict flag parser: `--name value`, `--name=value`, boolean `--flag`; unknown flags are errors. */
export class UsageError extends Error {}

export interface FlagSpec {
  [name: string]: {
    type: 'string' | 'number' | 'boolean';
    default?: string | number | boolean;
    help: string;
  };
}

export type Flags<S extends FlagSpec> = {
  [K in keyof S]: S[K]['type'] extends 'number' ? number : S[K]['type'] extends 'boolean' ? boolean : string;
} & {
  _: string[];
};

export function parseFlags<S extends FlagSpec>(argv: readonly string[], spec: S): Flags<S> {
  const out: Record<string, unknown> = { _: [] };
  for (const [name, def] of Object.entries(spec)) if (def.default !== undefined) out[name] = def.default;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) {
      (out._ as string[]).push(arg);
      continue;
    }
    const [rawName, inline] = arg.slice(2).split(/=(.*)/s, 2) as [string, string | undefined];
    const def = spec[rawName];
    if (!def) throw new UsageError(`unknown flag --${rawName} (see --help)`);
    if (def.type === 'boolean') {
      out[rawName] = inline === undefined ? true : inline !== 'false';
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined) throw new UsageError(`--${rawName} needs a value`);
    if (def.type === 'number') {
      const n = Number(value);
      if (!Number.isFinite(n) || n < 0)
        throw new UsageError(`--${rawName} must be a non-negative number, got ${JSON.stringify(value)}`);
      out[rawName] = n;
    } else out[rawName] = value;
  }
  return out as Flags<S>;
}

export function usage(command: string, summary: string, spec: FlagSpec): string {
  const lines = [`usage: onceonly ${command}`, '', summary, '', 'flags:'];
  for (const [name, def] of Object.entries(spec)) {
    const flag =
      def.type === 'boolean' ? `--${name}` : `--${name} <${def.type === 'number' ? 'n' : 'value'}>`;
    lines.push(
      `  ${flag.padEnd(26)} ${def.help}${def.default !== undefined && def.default !== false ? ` (default ${def.default})` : ''}`,
    );
  }
  return lines.join('\n');
}
