/**
 * What `sam build` does with a SAM template's esbuild functions, for test/package/lambda-deploy.test.ts:
 * the template read by a small YAML reader (the subset SAM templates here are written in), and the
 * esbuild command line AWS Lambda Builders' esbuild workflow makes from a function's
 * `BuildProperties` (aws-lambda-builders, workflows/nodejs_npm_esbuild/esbuild.py):
 *
 * - the entry points first (`EntryPoints`, else the handler's file), each with its extension (one
 *   given must exist; else `.ts`, then `.js`);
 * - then `--bundle --platform=node --outdir=<artifacts>`, and the defaults for what the properties
 *   leave out: `--target=es2020`, `--format=cjs`, `--minify` (SAM minifies unless `Minify: false`);
 * - then every other property in template order, its name in kebab case, by its YAML type: `true`
 *   as `--name` (`false` as nothing), a string as `--name=value`, a list as `--name:item` for each
 *   item (so esbuild's repeatable flags, `Banner`, `OutExtension`, `External`, `Loader`, must be
 *   lists: a string `Banner` becomes `--banner=...`, which esbuild refuses).
 */

/** A YAML value: the reader's output. `!Ref X` is `{ Ref: 'X' }`, other tags `{ '!Tag': value }`. */
export type Yaml = string | number | boolean | null | Yaml[] | { [key: string]: Yaml };
type Mapping = { [key: string]: Yaml };

/**
 * Reads the YAML subset the SAM templates here use: block mappings by indentation, `# comments`,
 * plain, single- and double-quoted scalars, flow sequences of scalars (`[a, 'b c']`), short tags
 * (`!Ref X`), and an anchor on a block mapping (`Metadata: &esbuild`) with its aliases
 * (`Metadata: *esbuild`). Anything else (block sequences, merge keys, multi-line scalars, flow
 * mappings, anchors on scalars) throws, naming the line, so a template that outgrows the reader
 * fails loudly instead of being misread.
 */
export function readYaml(text: string): Mapping {
  const lines = text
    .split('\n')
    .map((raw, i) => ({ n: i + 1, raw, text: stripComment(raw) }))
    .filter((line) => line.text.trim() !== '');
  let at = 0;
  const fail = (n: number, why: string): never => {
    throw new Error(`template line ${n}: ${why}: ${lines.find((l) => l.n === n)?.raw ?? ''}`);
  };
  const indentOf = (s: string) => s.length - s.trimStart().length;
  const anchors = new Map<string, Yaml>();

  function block(indent: number): Mapping {
    const out: Mapping = {};
    while (at < lines.length) {
      const line = lines[at]!;
      const own = indentOf(line.text);
      if (own < indent) break;
      if (own > indent) fail(line.n, 'unexpected indentation');
      const body = line.text.trim();
      if (body.startsWith('- ')) fail(line.n, 'block sequences are not read here: write [a, b]');
      const m = /^([A-Za-z0-9_.-]+|"[^"]*"|'[^']*'):(?:\s+(.*))?$/.exec(body);
      if (!m) fail(line.n, 'not a "key: value" line');
      const key = m![1]!.replace(/^["']|["']$/g, '');
      const rest = m![2]?.trim() ?? '';
      at++;
      const anchor = /^&([^\s]+)$/.exec(rest)?.[1];
      const alias = /^\*([^\s]+)$/.exec(rest)?.[1];
      if (rest === '' || anchor) {
        const next = lines[at];
        out[key] = next && indentOf(next.text) > indent ? block(indentOf(next.text)) : null;
        if (anchor) anchors.set(anchor, out[key]!);
      } else if (alias) {
        if (!anchors.has(alias)) fail(line.n, `no anchor &${alias} above`);
        out[key] = structuredClone(anchors.get(alias)!);
      } else {
        out[key] = value(rest, line.n);
      }
    }
    return out;
  }

  function value(s: string, n: number): Yaml {
    if (/^[&*]/.test(s)) fail(n, 'anchors and aliases are read on block mappings only');
    if (/^[|>]/.test(s)) fail(n, 'multi-line scalars are not read here');
    if (s.startsWith('{')) fail(n, 'flow mappings are not read here');
    const tag = /^!([A-Za-z]+)\s+(.*)$/.exec(s);
    if (tag) {
      const inner = value(tag[2]!, n);
      return tag[1] === 'Ref' ? { Ref: inner } : { [`!${tag[1]}`]: inner };
    }
    if (s.startsWith('[')) {
      if (!s.endsWith(']')) fail(n, 'a flow sequence must end on its line');
      return splitFlow(s.slice(1, -1), n).map((item) => scalar(item, n));
    }
    return scalar(s, n);
  }

  function scalar(s: string, n: number): Yaml {
    if (s.startsWith("'")) {
      if (!/^'(?:[^']|'')*'$/.test(s)) fail(n, 'unterminated single-quoted string');
      return s.slice(1, -1).replace(/''/g, "'");
    }
    if (s.startsWith('"')) {
      if (!/^"(?:[^"\\]|\\.)*"$/.test(s)) fail(n, 'unterminated double-quoted string');
      return JSON.parse(s) as string;
    }
    if (s === 'true' || s === 'false') return s === 'true';
    if (s === 'null' || s === '~') return null;
    if (/^-?\d+(\.\d+)?$/.test(s)) return Number(s);
    return s;
  }

  function splitFlow(s: string, n: number): string[] {
    const items: string[] = [];
    let current = '';
    let quote = '';
    for (const c of s) {
      if (quote) {
        current += c;
        if (c === quote) quote = '';
      } else if (c === "'" || c === '"') {
        quote = c;
        current += c;
      } else if (c === ',') {
        items.push(current.trim());
        current = '';
      } else if (c === '[' || c === '{') {
        fail(n, 'nested flow collections are not read here');
      } else current += c;
    }
    if (current.trim() !== '') items.push(current.trim());
    return items;
  }

  const doc = block(0);
  if (at < lines.length) fail(lines[at]!.n, 'unexpected indentation');
  return doc;
}

/** The line without its comment: a `#` at the start or after a space, outside quotes. */
function stripComment(line: string): string {
  let quote = '';
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = '';
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) return line.slice(0, i).trimEnd();
  }
  return line.trimEnd();
}

/** A function of the template, with what `sam build` and the Lambda runtime take from it. */
export interface SamFunction {
  readonly name: string;
  readonly handler: string;
  readonly runtime: string;
  readonly timeoutSeconds: number;
  readonly memoryMb: number;
  readonly buildMethod: unknown;
  readonly buildProperties: Mapping;
  /** The environment, `!Ref`s to parameters resolved from `parameters` (the deploy's answers). */
  readonly environment: Record<string, string>;
}

/** The template's `AWS::Serverless::Function` resources, `Globals.Function` applied as SAM does. */
export function samFunctions(template: Mapping, parameters: Record<string, string>): SamFunction[] {
  const map = (v: Yaml | undefined): Mapping => (v && typeof v === 'object' && !Array.isArray(v) ? v : {});
  const globals = map(map(template.Globals).Function);
  const resolve = (v: Yaml, name: string): string => {
    if (typeof v === 'string' || typeof v === 'number') return String(v);
    const ref = map(v).Ref;
    if (typeof ref === 'string' && ref in parameters) return parameters[ref]!;
    throw new Error(`environment variable ${name}: cannot resolve ${JSON.stringify(v)}`);
  };
  return Object.entries(map(template.Resources))
    .filter(([, r]) => map(r).Type === 'AWS::Serverless::Function')
    .map(([name, r]) => {
      const props = { ...globals, ...map(map(r).Properties) };
      const env: Record<string, string> = {};
      const vars = {
        ...map(map(globals.Environment).Variables),
        ...map(map(map(map(r).Properties).Environment).Variables),
      };
      for (const [k, v] of Object.entries(vars)) env[k] = resolve(v, k);
      const metadata = map(map(r).Metadata);
      return {
        name,
        handler: String(props.Handler),
        runtime: String(props.Runtime),
        timeoutSeconds: Number(props.Timeout ?? 3),
        memoryMb: Number(props.MemorySize ?? 128),
        buildMethod: metadata.BuildMethod,
        buildProperties: map(metadata.BuildProperties),
        environment: env,
      };
    });
}

/**
 * The esbuild arguments SAM's esbuild workflow runs for `fn` (see the module comment), entry points
 * checked in `buildDir` (`exists`), output to `outdir`.
 */
export function esbuildArgs(
  fn: SamFunction,
  outdir: string,
  exists: (relative: string) => boolean,
): string[] {
  const props = fn.buildProperties;
  // SAM CLI passes the properties in snake case (`_` before every capital but the first), which
  // Lambda Builders turns into kebab case.
  const kebab = (key: string) => key.replace(/(?<!^)(?=[A-Z])/g, '-').toLowerCase();
  const given = new Set(Object.keys(props).map(kebab));
  const entries = Array.isArray(props.EntryPoints)
    ? props.EntryPoints.map(String)
    : [fn.handler.split('.')[0]!];
  const args = entries.map((entry) => {
    if (/\.[^/]+$/.test(entry)) {
      if (exists(entry)) return entry;
      throw new Error(`${fn.name}: entry point ${entry} does not exist`);
    }
    const found = ['.ts', '.js'].map((ext) => entry + ext).find(exists);
    if (!found) throw new Error(`${fn.name}: entry point ${entry} does not exist`);
    return found;
  });
  args.push('--bundle', '--platform=node', `--outdir=${outdir}`);
  if (!given.has('target')) args.push('--target=es2020');
  if (!given.has('format')) args.push('--format=cjs');
  if (!given.has('minify')) args.push('--minify');
  for (const [key, value] of Object.entries(props)) {
    const flag = kebab(key);
    if (['bundle', 'platform', 'outdir', 'entry-points', 'use-npm-ci'].includes(flag)) continue;
    if (typeof value === 'boolean') {
      if (value) args.push(`--${flag}`);
    } else if (typeof value === 'string') {
      args.push(`--${flag}=${value}`);
    } else if (Array.isArray(value)) {
      for (const item of value) args.push(`--${flag}:${String(item)}`);
    } else {
      throw new Error(`${fn.name}: BuildProperties.${key}: SAM cannot pass ${JSON.stringify(value)}`);
    }
  }
  return args;
}
