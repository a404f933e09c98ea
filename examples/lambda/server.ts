/**
 * The Lambda example, locally: serves handler.ts's `handler` on node:http, each request turned into
 * the event a Lambda Function URL sends (payload 2.0, the body base64-encoded) with a context whose
 * remaining time runs out after 30 s, as the deployed function's would. Run from this folder:
 * `npx tsx server.ts`. Deploy the real thing with template.yaml.
 */
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import { handler } from './handler.js';

const port = Number(process.env.PORT ?? 3000);

const server = createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const [rawPath = '/', rawQueryString = ''] = (req.url ?? '/').split('?');
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined && name !== 'cookie')
      headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  const end = Date.now() + 30_000;
  const result = await handler(
    {
      version: '2.0',
      rawPath,
      rawQueryString,
      cookies: req.headers.cookie?.split('; '),
      headers,
      requestContext: { domainName: req.headers.host ?? 'localhost', http: { method: req.method ?? 'GET' } },
      body: Buffer.concat(chunks).toString('base64'),
      isBase64Encoded: true,
    },
    { callbackWaitsForEmptyEventLoop: true, getRemainingTimeInMillis: () => end - Date.now() },
  );
  res.writeHead(result.statusCode, {
    ...result.headers,
    ...(result.cookies ? { 'set-cookie': result.cookies } : {}),
  });
  res.end(result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body);
});

server.listen(port, '127.0.0.1', () => {
  const url = `http://127.0.0.1:${port}/`;
  const secret = process.env.STRIPE_WEBHOOK_SECRET ?? 'whsec_dev';
  const body = JSON.stringify({ id: 'evt_lambda_1', type: 'invoice.paid', data: { object: { id: 'in_1' } } });
  const t = Math.floor(Date.now() / 1000);
  const signature = `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
  console.log(`onceonly + AWS Lambda (as a Function URL) listening on ${url}`);
  console.log('send a signed delivery twice (processed, then duplicate):');
  console.log(
    `  curl -si ${url} -H 'content-type: application/json' -H 'stripe-signature: ${signature}' -d '${body}'`,
  );
});
