/**
 * The console over real stores (memory, Redis, PostgreSQL), opened as `onceonly console` opens
 * them, with real dead entries: a receiver in inbox mode whose handler fails buries them. Lists,
 * filters, pages, search, an entry's detail, requeue then processed by the worker, hostile payloads
 * shown inert, actions refused without the token or from another origin, no secret in any page.
 */
import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { openStore } from '../../src/cli/stores.js';
import { type ConsoleAction, createConsole } from '../../src/console/index.js';
import { createReceiver, hmac } from '../../src/index.js';
import { sharedStores } from '../support/probes.js';
import { reachable } from '../support/servers.js';

const SECRET = 'console-test-secret';
const XSS_TYPE = '<script>alert("type")</script>';
const XSS_LINK = 'javascript:alert(document.cookie)';
const BEARER = 'Bearer tok_sekrit_should_never_show';
const ORIGIN = 'http://console.test';

function signed(event: object, extra: Record<string, string> = {}): Request {
  const body = JSON.stringify(event);
  return new Request('https://example.com/hooks?token=abc123', {
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/json',
      'x-sig': createHmac('sha256', SECRET).update(body).digest('hex'),
      ...extra,
    },
  });
}

/** The session cookie and CSRF token a page hands out. */
async function session(res: Response): Promise<{ cookie: string; csrf: string; html: string }> {
  const html = await res.text();
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0]!;
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
  return { cookie, csrf, html };
}

function spec(label: string, url: string) {
  describe(`console on ${label}`, () => {
    const name = `oo_console_${randomBytes(4).toString('hex')}`;
    const receiverName = `acme-${randomBytes(3).toString('hex')}`;
    let opened: Awaited<ReturnType<typeof openStore>>;
    let fixed = false;
    const ran: string[] = [];
    const actions: ConsoleAction[] = [];
    let receiver: ReturnType<typeof createReceiver>;
    let app: ReturnType<typeof createConsole>;
    const get = (path: string, headers: Record<string, string> = {}) =>
      app.fetch(new Request(`${ORIGIN}/ops${path}`, { headers: { 'x-operator': 'alice', ...headers } }));
    const post = (path: string, form: Record<string, string>, headers: Record<string, string>) =>
      app.fetch(
        new Request(`${ORIGIN}/ops${path}`, {
          method: 'POST',
          body: new URLSearchParams(form).toString(),
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-operator': 'alice', ...headers },
        }),
      );

    before(async () => {
      opened = await openStore(url, name);
      receiver = createReceiver({
        name: receiverName,
        provider: hmac<{ id: string; type: string }>({
          name: 'acme',
          secret: SECRET,
          signatureHeader: 'x-sig',
          id: (e) => e.id,
          type: (e) => e.type,
        }),
        store: opened.store,
        maxBodyBytes: 4 * 1024 * 1024,
        inbox: { maxAttempts: 1 },
        logger: { warn: () => {}, error: () => {} },
        handler: async ({ id }) => {
          if (!fixed) throw new Error(`downstream refused ${id}: <img src=x onerror=alert(1)>`);
          ran.push(id!);
        },
      });
      const big = {
        id: 'evt_big',
        type: 'big.one',
        blob: 'x'.repeat(1_000_000),
        tail: '</pre><script>alert(2)</script>',
      };
      const sent = [
        signed({ id: 'evt_plain', type: 'order.paid' }),
        signed(
          { id: 'evt_xss', type: XSS_TYPE, link: XSS_LINK, html: '<script>alert(3)</script>' },
          {
            authorization: BEARER,
            cookie: 'sid=cookie_sekrit',
            'x-api-token': 'hdr_sekrit',
          },
        ),
        signed(big),
      ];
      for (const req of sent) {
        const r = await receiver.fetch(req);
        assert.equal(r.status, 202, `${r.status} ${await r.text()} ${JSON.stringify([...r.headers])}`);
      }
      await receiver.runDue();
      assert.equal(
        (await opened.store.inbox!.stats({ receiver: receiverName })).dead,
        3,
        'three dead entries',
      );
      app = createConsole({
        store: opened.store,
        receivers: [receiverName],
        basePath: '/ops',
        pageSize: 2,
        now: opened.now,
        log: (a) => void actions.push(a),
        authorize: (request) => request.headers.get('x-operator') ?? undefined,
      });
    });
    after(async () => {
      await opened.drop().catch(() => {});
      await opened.close();
    });

    it('refuses to be created without authorize, and refuses a request authorize refuses (no store data)', async () => {
      assert.throws(() => createConsole({ store: opened.store } as never), /authorize/);
      const res = await app.fetch(new Request(`${ORIGIN}/ops/entries?state=dead`));
      assert.equal(res.status, 403);
      assert.doesNotMatch(await res.text(), /evt_/);
    });

    it('shows counts by state per receiver under a strict CSP, with no script in the page', async () => {
      const res = await get('/');
      assert.equal(res.status, 200);
      const csp = res.headers.get('content-security-policy') ?? '';
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.doesNotMatch(csp, /unsafe-inline|script-src/);
      assert.match(res.headers.get('set-cookie') ?? '', /HttpOnly; SameSite=Strict/);
      const html = await res.text();
      assert.doesNotMatch(html, /<script/i);
      assert.match(
        html,
        new RegExp(
          `${receiverName}</td><td class="num"><a href="/ops/entries\\?state=dead&amp;receiver=${receiverName}">3</a>`,
        ),
      );
      assert.match(html, /No deliveries counted in this process/);
      for (const outcome of ['accepted', 'accepted', 'failed', 'dead', 'ignored']) app.record({ outcome });
      const charted = await (await get('/')).text();
      assert.match(charted, /<svg class="chart"[^>]*>.*accepted: 2.*processed: 0.*failed: 1.*dead: 1/s);
      assert.equal(charted.match(/<polyline /g)?.length, 4);
      assert.doesNotMatch(charted, /<script/i);
      const css = await get('/style.css');
      assert.equal(css.headers.get('content-type'), 'text/css; charset=utf-8');
    });

    it('lists dead entries paged on the store, filters by receiver, finds one by event id', async () => {
      const first = await (await get(`/entries?state=dead&receiver=${receiverName}`)).text();
      const rows = (h: string) => h.match(/<tr><td><span class="state state-dead">/g)?.length ?? 0;
      assert.equal(rows(first), 2);
      // The next page continues after the last entry shown (a cursor, read on the store's index).
      const nextLink = /href="([^"]+)" rel="next"/.exec(first)?.[1]?.replaceAll('&amp;', '&');
      assert.match(nextLink ?? '', /^\/ops\/entries\?state=dead&receiver=[^&]+&after=[^&]+$/);
      const second = await (await get(nextLink!.slice('/ops'.length))).text();
      assert.equal(rows(second), 1);
      assert.doesNotMatch(second, /rel="next"/);
      assert.match(second, /← first page/);
      // An offset still pages (links made before cursors).
      const byOffset = await (await get(`/entries?state=dead&receiver=${receiverName}&offset=2`)).text();
      assert.equal(rows(byOffset), 1);
      // A cursor the console did not make: a 400 page, never the store's error.
      for (const forged of ['nonsense', 'k9.1.1', '@x', `${'9'.repeat(300)}`]) {
        const res = await get(`/entries?state=dead&after=${encodeURIComponent(forged)}`);
        assert.equal(res.status, 400, forged);
        const page = await res.text();
        assert.match(page, /not one the console made/);
        assert.doesNotMatch(page, /invalid_option|must be a cursor/);
      }
      const other = await (await get('/entries?state=dead&receiver=nobody')).text();
      assert.equal(rows(other), 0);
      const found = await (await get('/entries?q=evt_plain')).text();
      assert.equal(rows(found), 1);
      assert.match(found, new RegExp(`${receiverName}:evt_plain`));
    });

    it('filters by type (exact or a prefix) and accepted time, the filter kept by the next link', async () => {
      const rows = (h: string) =>
        [...h.matchAll(/<a href="\/ops\/entry\?key=[^"]+%3A(evt_\w+)"/g)].map((m) => m[1]);
      const at = (q: string) => get(`/entries?receiver=${receiverName}&${q}`);
      assert.deepEqual(rows(await (await at('type=order.paid')).text()), ['evt_plain']);
      assert.deepEqual(rows(await (await at('state=dead&type=big.*')).text()), ['evt_big']);
      assert.deepEqual(rows(await (await at('type=order')).text()), [], 'exact unless it ends with *');
      assert.deepEqual(rows(await (await at('since=2999-01-01T00:00')).text()), []);
      // Accepted before a time to come: all three, two a page; the next link keeps the filter.
      const first = await (await at('until=2999-01-01T00:00:00')).text();
      assert.equal(rows(first).length, 2);
      const next = /href="([^"]+)" rel="next"/.exec(first)?.[1]?.replaceAll('&amp;', '&');
      assert.match(next ?? '', /until=2999-01-01T00%3A00%3A00/);
      const second = await (await get(next!.slice('/ops'.length))).text();
      assert.equal(rows(second).length, 1);
      assert.equal(new Set([...rows(first), ...rows(second)]).size, 3);
      const past = await (
        await at(`since=${new Date(Date.now() - 3_600_000).toISOString().slice(0, 19)}&type=big.one`)
      ).text();
      assert.deepEqual(rows(past), ['evt_big']);
      // A hostile filter shows inert in the form; a time that is not one is a 400 page.
      const hostile = await (await at(`type=${encodeURIComponent('"><script>alert(1)</script>')}`)).text();
      assert.doesNotMatch(hostile, /<script/i);
      for (const bad of ['yesterday', '2026-13-45T99:99', `${'9'.repeat(300)}`]) {
        const res = await at(`since=${encodeURIComponent(bad)}`);
        assert.equal(res.status, 400, bad);
        assert.match(await res.text(), /not one/);
      }
    });

    it('shows an entry with hostile text inert, secrets masked, and a 1 MB payload cut', async () => {
      assert.equal((await get('/entry?key=')).status, 404);
      assert.equal((await get(`/entry?key=${receiverName}:evt_never`)).status, 404);
      const html = await (await get(`/entry?key=${encodeURIComponent(`${receiverName}:evt_xss`)}`)).text();
      assert.doesNotMatch(html, /<script|<img/i);
      assert.match(html, /&lt;script&gt;alert\(&quot;type&quot;\)&lt;\/script&gt;/);
      assert.match(html, /&lt;img src=x onerror=alert\(1\)&gt;/, 'the last error, escaped');
      assert.doesNotMatch(html, /href="javascript:/i);
      for (const secret of ['tok_sekrit', 'cookie_sekrit', 'hdr_sekrit', 'abc123', SECRET])
        assert.ok(!html.includes(secret), `${secret} is not in the page`);
      assert.match(html, /authorization<\/th><td class="mono wrap">\(\d+ characters\)/);
      const big = await (await get(`/entry?key=${encodeURIComponent(`${receiverName}:evt_big`)}`)).text();
      assert.ok(big.length < 100_000, `the page is ${big.length} characters`);
      assert.match(big, /1,000,\d{3} bytes, json, the first 65,536 characters shown/);
      assert.doesNotMatch(big, /<script/i);
    });

    it('refuses an action without the token, with a foreign Origin, or cross-site; nothing changes', async () => {
      const key = `${receiverName}:evt_plain`;
      const page = await session(await get(`/entry?key=${encodeURIComponent(key)}`));
      assert.ok(page.csrf.length > 20);
      const tries: { form: Record<string, string>; headers: Record<string, string> }[] = [
        { form: { key }, headers: { cookie: page.cookie, origin: ORIGIN } },
        { form: { key, csrf: 'forged' }, headers: { cookie: page.cookie, origin: ORIGIN } },
        { form: { key, csrf: page.csrf }, headers: { cookie: page.cookie, origin: 'https://evil.example' } },
        { form: { key, csrf: page.csrf }, headers: { cookie: page.cookie, 'sec-fetch-site': 'cross-site' } },
        { form: { key, csrf: page.csrf }, headers: { cookie: page.cookie } },
        { form: { key, csrf: page.csrf }, headers: { origin: ORIGIN } },
        { form: { key, csrf: page.csrf }, headers: { cookie: page.cookie, origin: 'null' } },
      ];
      for (const t of tries)
        assert.equal((await post('/requeue', t.form, t.headers)).status, 403, JSON.stringify(t));
      assert.equal((await opened.store.inbox!.get(key))?.state, 'dead');
      assert.equal(actions.length, 0);
    });

    it('requeues one dead entry by POST with the token; the worker then processes it; logged with the operator', async () => {
      const key = `${receiverName}:evt_plain`;
      const page = await session(await get(`/entry?key=${encodeURIComponent(key)}`));
      const res = await post(
        '/requeue',
        { key, csrf: page.csrf },
        { cookie: page.cookie, 'sec-fetch-site': 'same-origin', origin: ORIGIN },
      );
      assert.equal(res.status, 303);
      assert.match(res.headers.get('location') ?? '', /done=requeued/);
      assert.equal((await opened.store.inbox!.get(key))?.state, 'pending');
      fixed = true;
      assert.equal(await receiver.runDue(), 1);
      assert.deepEqual(ran, ['evt_plain']);
      assert.equal((await opened.store.inbox!.get(key))?.state, 'completed');
      assert.deepEqual(
        actions.map((a) => [a.operator, a.action, a.key, a.count]),
        [['alice', 'requeue', key, 1]],
      );
      // Every state, paged state by state: 2 dead on the first page, the completed one on the next.
      const first = await (await get(`/entries?receiver=${receiverName}`)).text();
      assert.equal(first.match(/class="state state-dead"/g)?.length, 2);
      assert.doesNotMatch(first, /state-completed/);
      const next = /href="([^"]+)" rel="next"/.exec(first)?.[1]?.replaceAll('&amp;', '&');
      assert.equal(next, `/ops/entries?receiver=${receiverName}&from=completed`);
      const second = await (await get(next!.slice('/ops'.length))).text();
      assert.equal(second.match(/class="state state-completed"/g)?.length, 1);
      assert.doesNotMatch(second, /state-dead|rel="next"/);
    });

    it('requeues the dead of a receiver after a confirmation that shows the count, and purges', async () => {
      const confirm = await session(await get(`/requeue-dead?receiver=${receiverName}`));
      assert.match(confirm.html, /Requeue <strong>2<\/strong> dead entries/);
      const res = await post(
        '/requeue-dead',
        { receiver: receiverName, csrf: confirm.csrf },
        { cookie: confirm.cookie, origin: ORIGIN },
      );
      assert.equal(res.status, 303);
      assert.equal((await opened.store.inbox!.stats({ receiver: receiverName })).dead, 0);
      assert.equal(await receiver.runDue(), 2);
      assert.deepEqual(ran.sort(), ['evt_big', 'evt_plain', 'evt_xss']);
      const purge = await post('/purge', { csrf: confirm.csrf }, { cookie: confirm.cookie, origin: ORIGIN });
      assert.equal(purge.status, 303);
      assert.deepEqual(
        actions.map((a) => a.action),
        ['requeue', 'requeue-dead', 'purge'],
      );
      assert.equal(actions[1]?.count, 2);
    });

    it('shows the claims view where the store has one, with the conflicts the receivers reported', async () => {
      const res = await get('/claims');
      assert.equal(res.status, 200);
      const before = await res.text();
      assert.match(before, /<h1>Claims<\/h1>/);
      assert.match(before, /None reported/);
      app.record({ outcome: 'processed', key: 'k_fine' });
      app.record({
        outcome: 'conflict',
        receiver: receiverName,
        key: `${receiverName}:<script>alert(4)</script>`,
        type: 'order.paid',
      });
      const after = await (await get('/claims')).text();
      assert.match(after, /state-dead">conflict<\/span>/);
      assert.match(after, /:&lt;script&gt;alert\(4\)&lt;\/script&gt;/);
      assert.doesNotMatch(after, /<script|k_fine/);
    });
  });
}

spec('memory', 'memory');
for (const [label, url, probe] of sharedStores.filter(([name]) => name !== 'MariaDB/MySQL'))
  if (await reachable(label, url, probe)) spec(label, url);

/** An inbox delivery as the paging and retry tests accept it (a JSON body, no signature kept). */
function plainDelivery(key: string, receiver: string, type: string, id: string, body: Uint8Array) {
  return {
    key,
    receiver,
    fingerprint: 'f'.repeat(64),
    type,
    id,
    body,
    headers: [['content-type', 'application/json']] as [string, string][],
    url: 'https://example.com/hooks',
    receivedAt: new Date(),
  };
}

/**
 * The keys of `receiver`'s entries (`<receiver>:evt_<n>`) on every page from `first` on, following
 * the next links; each page answers 200, and the walk ends within `maxPages`.
 */
async function walkPages(
  app: ReturnType<typeof createConsole>,
  first: string,
  receiver: string,
  maxPages: number,
): Promise<string[]> {
  const keys: string[] = [];
  let path: string | undefined = first;
  for (let pages = 0; path !== undefined; pages++) {
    assert.ok(pages < maxPages, 'the walk ends');
    const res = await app.fetch(new Request(`${ORIGIN}${path}`));
    assert.equal(res.status, 200, path);
    const page = await res.text();
    const shown = [...page.matchAll(/href="\/entry\?key=([^"%]+)%3Aevt_(\d+)"/g)];
    keys.push(...shown.filter((m) => m[1] === receiver).map((m) => `${receiver}:evt_${m[2]}`));
    path = /href="([^"]+)" rel="next"/.exec(page)?.[1]?.replaceAll('&amp;', '&');
  }
  return keys;
}

function walkSpec(label: string, url: string) {
  describe(`console on ${label}: pages by cursor, retry now`, () => {
    it('walks every entry once, in the list order, through next links: every state, and each one', async (t) => {
      // Prepare: 11 entries of one receiver: 3 dead, 2 processing, 2 completed, 4 pending.
      const opened = await openStore(url, `oo_console_walk_${randomBytes(4).toString('hex')}`);
      t.after(async () => {
        await opened.drop().catch(() => {});
        await opened.close();
      });
      const { store } = opened;
      const inbox = store.inbox!;
      const receiverName = `walk${randomBytes(3).toString('hex')}`;
      for (let i = 0; i < 11; i++) {
        await inbox.accept(
          plainDelivery(
            `${receiverName}:evt_${i}`,
            receiverName,
            'walk.step',
            `evt_${i}`,
            new Uint8Array([i]),
          ),
        );
      }
      const jobs = await inbox.take({ limit: 11, leaseMs: 60_000, receiver: receiverName });
      for (const j of jobs.slice(0, 3)) await inbox.bury(j.lease, { error: 'x' });
      for (const j of jobs.slice(3, 5)) await inbox.complete(j.lease, { retentionMs: 60_000 });
      for (const j of jobs.slice(5, 9)) await inbox.retry(j.lease, { delayMs: 0, error: 'y' });
      const app = createConsole({
        store,
        receivers: [receiverName],
        pageSize: 2,
        authorize: () => 'alice',
      });
      const walk = (first: string) => walkPages(app, first, receiverName, 20);
      // Act and assess
      const whole = await inbox.list({ receiver: receiverName });
      assert.equal(whole.length, 11);
      assert.deepEqual(
        await walk(`/entries?receiver=${receiverName}`),
        whole.map((e) => e.key),
      );
      for (const state of ['dead', 'pending', 'processing', 'completed'] as const) {
        assert.deepEqual(
          await walk(`/entries?state=${state}&receiver=${receiverName}`),
          whole.filter((e) => e.state === state).map((e) => e.key),
          state,
        );
      }
    });
    it('requeues the dead entries of a type after a confirmation that counts them; the others stay dead', async (t) => {
      // Prepare: 5 dead entries, 2 of type a.fail and 3 of type b.fail.
      const opened = await openStore(url, `oo_console_sel_${randomBytes(4).toString('hex')}`);
      t.after(async () => {
        await opened.drop().catch(() => {});
        await opened.close();
      });
      const inbox = opened.store.inbox!;
      const receiverName = `sel${randomBytes(3).toString('hex')}`;
      for (let i = 0; i < 5; i++) {
        const type = i < 2 ? 'a.fail' : 'b.fail';
        await inbox.accept(
          plainDelivery(`${receiverName}:evt_${i}`, receiverName, type, `evt_${i}`, new Uint8Array([i])),
        );
      }
      for (const job of await inbox.take({ limit: 5, leaseMs: 60_000, receiver: receiverName }))
        await inbox.bury(job.lease, { error: 'x' });
      const actions: ConsoleAction[] = [];
      const app = createConsole({
        store: opened.store,
        receivers: [receiverName],
        pageSize: 2,
        authorize: () => 'alice',
        log: (a) => void actions.push(a),
      });
      const list = await (
        await app.fetch(new Request(`${ORIGIN}/entries?state=dead&receiver=${receiverName}&type=a.*`))
      ).text();
      const link = /href="(\/requeue-dead\?[^"]+)"/.exec(list)?.[1]?.replaceAll('&amp;', '&');
      assert.equal(link, `/requeue-dead?receiver=${receiverName}&type=a.*`.replace('*', '*'));
      // Act
      const confirm = await session(await app.fetch(new Request(`${ORIGIN}${link}`)));
      assert.match(confirm.html, /Requeue <strong>2<\/strong> dead entries of \w+ that match type a\.\*/);
      const res = await app.fetch(
        new Request(`${ORIGIN}/requeue-dead`, {
          method: 'POST',
          body: new URLSearchParams({ receiver: receiverName, type: 'a.*', csrf: confirm.csrf }).toString(),
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            cookie: confirm.cookie,
            origin: ORIGIN,
          },
        }),
      );
      // Assess
      assert.equal(res.status, 303);
      const states = await Promise.all(
        [0, 1, 2, 3, 4].map(async (i) => (await inbox.get(`${receiverName}:evt_${i}`))?.state),
      );
      assert.deepEqual(states, ['pending', 'pending', 'dead', 'dead', 'dead']);
      assert.deepEqual(
        actions.map((a) => [a.action, a.receiver, a.filter?.type, a.count]),
        [['requeue-dead', receiverName, 'a.*', 2]],
      );
    });

    it('retries a waiting entry now by POST with the token: due at once, run as its next attempt, logged', async (t) => {
      // Prepare: one entry failed once and waiting an hour for its next attempt.
      const opened = await openStore(url, `oo_console_now_${randomBytes(4).toString('hex')}`);
      t.after(async () => {
        await opened.drop().catch(() => {});
        await opened.close();
      });
      const inbox = opened.store.inbox!;
      const receiverName = `now${randomBytes(3).toString('hex')}`;
      const key = `${receiverName}:evt_later`;
      await inbox.accept(
        plainDelivery(key, receiverName, 'order.paid', 'evt_later', new TextEncoder().encode('{}')),
      );
      const [job] = await inbox.take({ limit: 1, leaseMs: 60_000, receiver: receiverName });
      assert.equal(await inbox.retry(job!.lease, { delayMs: 3_600_000, error: 'downstream 503' }), true);
      const actions: ConsoleAction[] = [];
      const app = createConsole({
        store: opened.store,
        receivers: [receiverName],
        authorize: () => 'alice',
        log: (a) => void actions.push(a),
      });
      const path = `/entry?key=${encodeURIComponent(key)}`;
      const page = await session(await app.fetch(new Request(`${ORIGIN}${path}`)));
      assert.match(page.html, /Retry now/);
      assert.equal((await inbox.take({ limit: 1, leaseMs: 60_000, receiver: receiverName })).length, 0);
      // Act
      const res = await app.fetch(
        new Request(`${ORIGIN}/requeue`, {
          method: 'POST',
          body: new URLSearchParams({ key, csrf: page.csrf }).toString(),
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            cookie: page.cookie,
            origin: ORIGIN,
          },
        }),
      );
      // Assess
      assert.equal(res.status, 303);
      assert.match(res.headers.get('location') ?? '', /done=requeued/);
      const [again] = await inbox.take({ limit: 1, leaseMs: 60_000, receiver: receiverName });
      assert.equal(again?.key, key);
      assert.equal(again?.lease.attempt, 2);
      assert.deepEqual(
        actions.map((a) => [a.operator, a.action, a.key, a.count]),
        [['alice', 'requeue', key, 1]],
      );
    });
  });
}

describe('console filters over more entries than a page may read', () => {
  it('scans at most SCAN_MAX entries a page, says so, and the next link continues the scan: every match once', async () => {
    // Prepare: 5,300 pending entries, 3 of them of a rare type, one before the bound and two past it.
    const { memoryStore } = await import('../../src/stores/memory.js');
    const { SCAN_MAX } = await import('../../src/console/filter.js');
    const store = memoryStore();
    const inbox = store.inbox!;
    const rare = new Set([10, SCAN_MAX + 100, SCAN_MAX + 250]);
    for (let i = 0; i < SCAN_MAX + 300; i++)
      await inbox.accept(
        plainDelivery(
          `big:evt_${i}`,
          'big',
          rare.has(i) ? 'rare.one' : 'noise',
          `evt_${i}`,
          new Uint8Array([1]),
        ),
      );
    const app = createConsole({ store, receivers: ['big'], pageSize: 2, authorize: () => 'alice' });
    // Act
    const first = await (
      await app.fetch(new Request(`${ORIGIN}/entries?state=pending&type=rare.one`))
    ).text();
    // Assess
    assert.match(first, /this page read 5,000 entries/);
    assert.match(first, /rel="next">scan further/);
    const found = await walkPages(app, '/entries?state=pending&type=rare.one', 'big', 5);
    assert.deepEqual(
      found,
      [...rare].map((i) => `big:evt_${i}`),
    );
    const everyState = await walkPages(app, '/entries?type=rare.one', 'big', 5);
    assert.deepEqual(everyState, found);
  });
});

describe('console over an inbox of its own that gives no cursor', () => {
  it('pages by offset, as before cursors: every entry once, in every state and in one', async () => {
    // Prepare: a store written before cursors: list ignores after and sets no cursor.
    const { memoryStore } = await import('../../src/stores/memory.js');
    const store = memoryStore();
    const inner = store.inbox!;
    const inbox: typeof inner = {
      ...inner,
      accept: (input, options) => inner.accept(input, options),
      take: (options) => inner.take(options),
      bury: (lease, options) => inner.bury(lease, options),
      stats: (options) => inner.stats(options),
      get: (key) => inner.get(key),
      list: async ({ after: _, ...options } = {}) =>
        (await inner.list(options)).map(({ cursor: _c, ...entry }) => entry),
    };
    for (let i = 0; i < 5; i++) {
      await inbox.accept(plainDelivery(`old:evt_${i}`, 'old', 'old.one', `evt_${i}`, new Uint8Array([i])));
    }
    for (const job of await inbox.take({ limit: 3, leaseMs: 60_000, receiver: 'old' }))
      await inbox.bury(job.lease, { error: 'x' });
    const app = createConsole({
      store: { ...store, inbox },
      receivers: ['old'],
      pageSize: 2,
      authorize: () => 'alice',
    });
    const walk = (first: string) => walkPages(app, first, 'old', 10);
    // Act and assess
    const whole = (await inner.list({ receiver: 'old' })).map((e) => e.key);
    assert.equal(whole.length, 5);
    assert.deepEqual(await walk('/entries?receiver=old'), whole);
    assert.deepEqual(await walk('/entries?state=dead&receiver=old'), whole.slice(0, 3));
  });
});

walkSpec('memory', 'memory');
for (const [label, url, probe] of sharedStores.filter(([name]) => name !== 'MariaDB/MySQL'))
  if (await reachable(label, url, probe)) walkSpec(label, url);
