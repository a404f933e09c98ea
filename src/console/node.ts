/**
 * The console on a Node request and response (node:http, Express, Koa's `ctx.req`/`ctx.res`,
 * Fastify's raw ones): the request made a web `Request` (its form body read up to 16 KiB), the
 * `Response` written back. Express strips the mount path from `req.url`; `originalUrl` keeps it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Console } from './types.js';

const BODY_MAX = 16 * 1024;

export function nodeHandler(console: Console): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (req, res) => {
    const response = await console.fetch(await toRequest(req));
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      headers[name] = value;
    });
    res.writeHead(response.status, headers);
    res.end(req.method === 'HEAD' ? undefined : Buffer.from(await response.arrayBuffer()));
  };
}

async function toRequest(req: IncomingMessage): Promise<Request> {
  const path = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? '/';
  const secure = (req.socket as { encrypted?: boolean }).encrypted === true;
  const url = new URL(path, `${secure ? 'https' : 'http'}://${req.headers.host ?? 'localhost'}`);
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  const method = req.method ?? 'GET';
  if (method === 'GET' || method === 'HEAD') return new Request(url, { method, headers });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    chunks.push(chunk);
    if (size > BODY_MAX) break; // past the bound: the console refuses it by its length, the rest is never read
  }
  return new Request(url, { method, headers, body: Buffer.concat(chunks) });
}
