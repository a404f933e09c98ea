// The load hook of scripts/test-hold.mjs: the entry test file, as compiled, gets one statement at
// its end that releases the hold (it runs once every top-level `await` before it has settled).
let entry = '';
let release = '';

export function initialize(data) {
  entry = data.entry;
  release = data.release;
}

export async function load(url, context, nextLoad) {
  const result = await nextLoad(url, context);
  if (url !== entry || result.source == null) return result;
  const source =
    typeof result.source === 'string' ? result.source : Buffer.from(result.source).toString('utf8');
  const call = `\n;globalThis[Symbol.for(${JSON.stringify(release)})]?.();\n`;
  // Before the source map comment, which stays last.
  const map = source.lastIndexOf('\n//# sourceMappingURL=');
  return {
    ...result,
    source: map === -1 ? source + call : source.slice(0, map) + call + source.slice(map),
  };
}
