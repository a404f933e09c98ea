/**
 * The console's stylesheet, served by the handler itself (`<base>/style.css`) so the pages need no
 * inline style under their Content-Security-Policy (`style-src 'self'`), and built into the package
 * as a string: nothing to copy, no runtime dependency.
 */
export const STYLE = `:root { color-scheme: light dark; --fg: #1d2430; --muted: #5b6472; --line: #d7dce3; --bg: #fff;
  --panel: #f5f7fa; --accent: #1f5fbf; --dead: #b3261e; --pending: #8a5a00; --processing: #1f5fbf; --completed: #1e7a3a; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e9ee; --muted: #9aa3b0; --line: #343b46; --bg: #14181e;
  --panel: #1c222a; --accent: #7fb0ff; --dead: #ff8a80; --pending: #ffcc66; --processing: #7fb0ff; --completed: #7bd88f; } }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; gap: 1.5rem; align-items: baseline; padding: .75rem 1.25rem; border-bottom: 1px solid var(--line); background: var(--panel); }
header strong { font-size: 1rem; }
header nav a { margin-right: 1rem; }
header .who { margin-left: auto; color: var(--muted); }
main { padding: 1rem 1.25rem 3rem; max-width: 1200px; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
h1 { font-size: 1.25rem; margin: .25rem 0 1rem; }
h2 { font-size: 1rem; margin: 1.5rem 0 .5rem; }
table { border-collapse: collapse; width: 100%; margin: .25rem 0 1rem; }
th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
.wrap { overflow-wrap: anywhere; word-break: break-all; }
pre { background: var(--panel); border: 1px solid var(--line); padding: .75rem; overflow: auto; max-height: 32rem; white-space: pre-wrap; overflow-wrap: anywhere; }
.state { font-weight: 600; }
.state-dead { color: var(--dead); }
.state-pending { color: var(--pending); }
.state-processing { color: var(--processing); }
.state-completed { color: var(--completed); }
.muted { color: var(--muted); }
.note { background: var(--panel); border-left: 3px solid var(--accent); padding: .5rem .75rem; margin: .75rem 0; }
.error { border-left-color: var(--dead); }
form.inline { display: inline; }
form.filters { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; margin: 0 0 1rem; }
label { display: flex; flex-direction: column; gap: .15rem; color: var(--muted); font-size: 12px; }
input, select, button { font: inherit; padding: .3rem .5rem; border: 1px solid var(--line); border-radius: 4px; background: var(--bg); color: var(--fg); }
button { cursor: pointer; background: var(--accent); color: #fff; border-color: var(--accent); }
button.danger { background: var(--dead); border-color: var(--dead); }
.pager { display: flex; gap: 1rem; margin: .5rem 0; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1rem; margin: 0 0 1rem; }
dt { color: var(--muted); }
dd { margin: 0; overflow-wrap: anywhere; }
svg.chart { width: 100%; max-width: 640px; height: auto; border: 1px solid var(--line); background: var(--panel); }
svg.chart text { font-size: 10px; fill: var(--muted); }
`;
