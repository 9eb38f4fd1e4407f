// Against a real server: run through ../harness.sh (ci.sh does). Skipped when MAILBOLT_BASE_URL is unset.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Mailbolt, MailboltError } from '../index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const env = process.env;
const skip = env.MAILBOLT_BASE_URL ? false : 'MAILBOLT_BASE_URL is not set (run through clients/harness.sh)';
const live = skip ? null : new Mailbolt(); // MAILBOLT_API_KEY, MAILBOLT_BASE_URL
const sandbox = skip ? null : new Mailbolt({ apiKey: env.MAILBOLT_TEST_API_KEY });
const run = crypto.randomBytes(4).toString('hex');
const msg = (extra = {}) => ({ from: 'sender@example.com', to: [`ann-${run}@example.net`], subject: 'Hello', text: 'Hi.', ...extra });

async function rejectsWith(promise, status, code) {
  const e = await promise.then(() => null, (x) => x);
  assert.ok(e instanceof MailboltError, `expected a MailboltError ${status} ${code}, got ${e}`);
  assert.equal(e.status, status, `${e.code}: ${e.message}`);
  assert.equal(e.code, code);
  assert.ok(e.message.length > 0);
  assert.ok(e.requestId, 'the X-Request-Id');
  return e;
}

test('send with the test key, then get it', { skip }, async () => {
  const m = await sandbox.messages.send(msg());
  assert.match(m.id, /^[0-9a-f-]{36}$/);
  assert.equal(m.status, 'queued');
  assert.equal(m.$response.status, 202);
  assert.ok(m.$response.requestId);
  assert.ok(m.$response.rateLimit.limit > 0, 'X-RateLimit-Limit');
  assert.ok(m.$response.rateLimit.remaining >= 0, 'X-RateLimit-Remaining');
  assert.ok(m.$response.rateLimit.reset > 1_600_000_000, 'X-RateLimit-Reset');
  const got = await sandbox.messages.get(m.id);
  assert.equal(got.id, m.id);
  assert.equal(got.subject, 'Hello');
  assert.deepEqual(got.to, [`ann-${run}@example.net`]);
});

test('batch send', { skip }, async () => {
  const b = await sandbox.messages.sendBatch([msg({ subject: 'one' }), msg({ subject: 'two' }), msg({ subject: 'three' })]);
  assert.equal(b.data.length, 3);
  assert.equal(new Set(b.data.map((m) => m.id)).size, 3);
  assert.equal((await sandbox.messages.get(b.data[1].id)).subject, 'two');
});

test('cancel a scheduled message', { skip }, async () => {
  const m = await sandbox.messages.send(msg({ send_at: new Date(Date.now() + 24 * 3600 * 1000).toISOString() }));
  assert.equal(m.status, 'scheduled');
  const c = await sandbox.messages.cancel(m.id);
  assert.equal(c.status, 'cancelled');
  // A cancelled message is gone (410), and cancelling it again says so.
  await rejectsWith(sandbox.messages.get(m.id), 410, 'GONE');
  await rejectsWith(sandbox.messages.cancel(m.id), 410, 'GONE');
});

test('list messages and suppressions, both pagination modes walked to the end', { skip }, async () => {
  await sandbox.messages.sendBatch(Array.from({ length: 5 }, (_, i) => msg({ subject: `page ${i}` })));
  const byCursor = [];
  let cursorPages = 0;
  for await (const p of sandbox.messages.pages({ limit: 2 })) {
    cursorPages++;
    assert.ok(p.data.length <= 2);
    byCursor.push(...p.data.map((m) => m.id));
  }
  const first = await sandbox.messages.list({ page: 1, limit: 2 });
  const total = first.total;
  assert.ok(total >= 5, `total ${total}`);
  assert.ok(first.$response.links.last, 'a Link header');
  const byPage = [];
  let pages = 0;
  for await (const p of sandbox.messages.pages({ page: 1, limit: 2 })) {
    pages++;
    byPage.push(...p.data.map((m) => m.id));
  }
  assert.equal(pages, Math.ceil(total / 2));
  assert.equal(cursorPages, Math.ceil(total / 2));
  assert.equal(byPage.length, total);
  assert.deepEqual(byCursor, byPage, 'the same messages in the same order');
  assert.equal(new Set(byCursor).size, total, 'no repeats');

  const recipients = Array.from({ length: 7 }, (_, i) => `sup${i}-${run}@example.org`);
  for (const r of recipients) await live.suppressions.add({ recipient: r, reason: 'manual' });
  const seenCursor = [];
  for await (const s of live.suppressions.all({ limit: 3 })) seenCursor.push(s.recipient);
  const seenPage = [];
  for await (const s of live.suppressions.all({ page: 1, limit: 3 })) seenPage.push(s.recipient);
  for (const r of recipients) {
    assert.ok(seenCursor.includes(r), `${r} in the cursor walk`);
    assert.ok(seenPage.includes(r), `${r} in the page walk`);
  }
  assert.deepEqual(seenCursor, seenPage);
  const single = await live.suppressions.list({ limit: 3 });
  assert.equal(single.data.length, 3);
  assert.equal(single.has_more, true);
  assert.ok(single.cursor);
  await live.suppressions.delete(recipients[0]);
  const after = [];
  for await (const s of live.suppressions.all({ limit: 200 })) after.push(s.recipient);
  assert.ok(!after.includes(recipients[0]));
});

test('401 with a bad key', { skip }, async () => {
  const bad = new Mailbolt({ apiKey: 'svc_live_thisisnotakey' });
  await rejectsWith(bad.account.get(), 401, 'INVALID_API_KEY');
});

test('403 with a key lacking the scope', { skip }, async () => {
  const narrow = new Mailbolt({ apiKey: env.MAILBOLT_NARROW_API_KEY });
  const a = await narrow.account.get();
  assert.ok(a.$response.status === 200, 'account:read is allowed');
  await rejectsWith(narrow.messages.list(), 403, 'INSUFFICIENT_SCOPES');
});

test("404 for another tenant's message", { skip }, async () => {
  const m = await sandbox.messages.send(msg());
  const other = new Mailbolt({ apiKey: env.MAILBOLT_OTHER_API_KEY });
  await rejectsWith(other.messages.get(m.id), 404, 'NOT_FOUND');
});

test('409 when an Idempotency-Key is reused with another body', { skip }, async () => {
  const key = `conflict-${run}`;
  await sandbox.messages.send(msg({ subject: 'first' }), { idempotencyKey: key });
  await rejectsWith(sandbox.messages.send(msg({ subject: 'second' }), { idempotencyKey: key }), 409, 'IDEMPOTENCY_CONFLICT');
});

test('422 for a live send from an unverified domain', { skip }, async () => {
  const e = await rejectsWith(live.messages.send(msg({ from: `x@unverified-${run}.example` })), 422, 'DOMAIN_NOT_VERIFIED');
  assert.equal(e.details?.domain, `unverified-${run}.example`);
});

test('idempotent replay: the same key twice gives the same message', { skip }, async () => {
  const key = `replay-${run}`;
  const a = await sandbox.messages.send(msg({ subject: 'once' }), { idempotencyKey: key });
  const b = await sandbox.messages.send(msg({ subject: 'once' }), { idempotencyKey: key });
  assert.equal(b.id, a.id);
  assert.equal(a.$response.replayed, false);
  assert.equal(b.$response.replayed, true);
  assert.equal(b.$response.headers['idempotent-replayed'], 'true');
  assert.notEqual(b.$response.requestId, a.$response.requestId, 'a fresh X-Request-Id');
});

test('429 is retried after Retry-After and then succeeds', { skip }, async () => {
  // The limited key allows 1 request per second: of three calls at once, at least two share a
  // second, so at least one is answered 429 and waits for the next window.
  const waits = [];
  const limited = new Mailbolt({
    apiKey: env.MAILBOLT_LIMITED_API_KEY,
    maxRetries: 5,
    sleep: (ms) => { waits.push(ms); return new Promise((r) => setTimeout(r, ms)); },
  });
  const answers = await Promise.all([limited.account.get(), limited.account.get(), limited.account.get()]);
  for (const a of answers) assert.equal(a.$response.status, 200);
  assert.ok(waits.length >= 1, 'at least one 429 was retried');
  for (const w of waits) assert.ok(w >= 1000, `Retry-After (1 s at least) honoured: waited ${w} ms`);
  assert.equal(answers[0].$response.rateLimit.limit, 1);

  // Without retries the 429 reaches the caller with its code.
  const noRetry = new Mailbolt({ apiKey: env.MAILBOLT_LIMITED_API_KEY, maxRetries: 0 });
  const results = await Promise.allSettled([noRetry.account.get(), noRetry.account.get(), noRetry.account.get()]);
  const refused = results.filter((r) => r.status === 'rejected').map((r) => r.reason);
  assert.ok(refused.length >= 1);
  for (const e of refused) {
    assert.equal(e.status, 429);
    assert.equal(e.code, 'RATE_LIMIT_EXCEEDED');
    assert.ok(e.transient);
    assert.ok(Number(e.headers['retry-after']) >= 1);
  }
});

test('other operations answer: account, events, domains, templates, webhooks, keys, team, analytics, ips, grader', { skip }, async () => {
  assert.ok((await live.account.get()).$response.status === 200);
  const ev = await sandbox.events.list({ limit: 5 });
  assert.ok(Array.isArray(ev.data));
  const d = await live.domains.create(`d-${run}.example`);
  assert.equal((await live.domains.get(d.id)).id, d.id);
  assert.ok((await live.domains.list()).data.some((x) => x.id === d.id));
  await live.domains.delete(d.id);
  await rejectsWith(live.domains.get(d.id), 404, 'NOT_FOUND');
  const t = await live.templates.create({ name: `t-${run}`, subject: 'Hi {{name}}', text: 'Hello {{name}}' });
  const r = await live.templates.render(t.id, { data: { name: 'Ann' } });
  assert.equal(r.subject, 'Hi Ann');
  const u = await live.templates.update(t.id, { subject: 'Hey {{name}}' });
  assert.ok(u.id);
  const versions = await live.templates.listVersions(t.id);
  assert.ok(versions.data.length >= 2);
  const w = await live.webhooks.create({ url: 'https://hooks.example.com/mb', events: ['message.delivered'] });
  assert.ok(w.secret);
  const rotated = await live.webhooks.rotateSecret(w.id);
  assert.notEqual(rotated.secret, w.secret);
  assert.ok(Array.isArray((await live.webhooks.listDeliveries(w.id)).data));
  await live.webhooks.delete(w.id);
  const k = await live.apiKeys.create({ name: `k-${run}`, scopes: ['account:read'] });
  assert.equal((await live.apiKeys.get(k.id)).id, k.id);
  await live.apiKeys.revoke(k.id);
  const audit = await live.account.auditLog({ limit: 50 });
  assert.deepEqual(audit.data.filter((e) => e.target === k.id).map((e) => [e.action, e.actor_kind]),
    [['api_key.revoke', 'api_key'], ['api_key.create', 'api_key']]);
  assert.ok(Array.isArray((await live.team.list()).data));
  assert.ok((await live.analytics.summary()).$response.status === 200);
  assert.ok((await live.ips.list()).$response.status === 200);
  assert.ok((await live.ips.listPools()).$response.status === 200);
  assert.ok((await live.grader.history()).$response.status === 200);
});

test('examples/run send prints the id of a message', { skip }, () => {
  const r = spawnSync(path.join(here, '../examples/run'), ['send'], {
    encoding: 'utf8',
    env: { ...env, MAILBOLT_API_KEY: env.MAILBOLT_TEST_API_KEY, MAILBOLT_EXAMPLE_FROM: 'sender@example.com', MAILBOLT_EXAMPLE_TO: 'ann@example.net' },
  });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^[0-9a-f-]{36}\n$/);
});

test('suppressions import and export', { skip }, async () => {
  const a = `imp-${run}-a@example.com`;
  const b = `imp-${run}-b@example.com`;
  const res = await live.suppressions.import([{ recipient: a }, { recipient: b, reason: 'unsubscribe', stream: 'broadcast' }, { recipient: a }]);
  assert.deepEqual({ ...res }, { added: 2, already_present: 1 });
  assert.equal(res.$response.status, 200);
  const bad = await rejectsWith(live.suppressions.import([{ recipient: `imp-${run}-c@example.com` }, { recipient: 'not an address' }]), 400, 'VALIDATION_ERROR');
  assert.equal(bad.details.index, 1);
  const csv = await live.suppressions.export();
  assert.ok(csv.startsWith('recipient,reason,stream\n'), csv);
  assert.ok(csv.includes(`${a},manual,\n${b},unsubscribe,broadcast\n`), csv);
  assert.ok(!csv.includes(`imp-${run}-c@`));
  assert.equal((await live.suppressions.export({ stream: 'broadcast' })).split(`imp-${run}`).length - 1, 1);
  const other = new Mailbolt({ apiKey: env.MAILBOLT_OTHER_API_KEY });
  assert.ok(!(await other.suppressions.export()).includes(`imp-${run}`));
  // b's entry is for broadcast only: its transactional entry is not there.
  await rejectsWith(live.suppressions.deleteFromStream(b, 'transactional'), 404, 'NOT_FOUND');
  assert.equal((await live.suppressions.deleteFromStream(b, 'broadcast')).$response.status, 204);
  await live.suppressions.delete(a);
});

test('webhooks.update keeps the secret, webhooks.test reaches a receiver signed, messages.raw answers the source', { skip }, async () => {
  const http = await import('node:http');
  const got = [];
  const srv = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => { got.push({ body: Buffer.concat(chunks), headers: req.headers }); res.end('got it'); });
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  try {
    const url = `http://127.0.0.1:${srv.address().port}/hook`;
    const w = await sandbox.webhooks.create({ url: `${url}/old`, events: ['message.sent'] });
    assert.equal(w.enabled, true);
    const up = await sandbox.webhooks.update(w.id, { url, events: ['message.bounced'], enabled: false });
    assert.deepEqual([up.url, up.events, up.enabled, up.secret], [url, ['message.bounced'], false, undefined]);
    await rejectsWith(sandbox.webhooks.update(w.id, { events: ['message.exploded'] }), 400, 'VALIDATION_ERROR');

    const res = await sandbox.webhooks.test(w.id);
    assert.deepEqual([res.success, res.status_code, res.response, res.event], [true, 200, 'got it', 'webhook.test']);
    assert.equal(got.length, 1);
    assert.ok(sandbox.webhooks.verify(got[0].body, got[0].headers, [w.secret]), 'signed with the secret from before the update');
    assert.equal(JSON.parse(got[0].body.toString('utf8')).id, res.event_id);

    const m = await sandbox.messages.send(msg({ subject: 'Raw source' }));
    const raw = await sandbox.messages.raw(m.id);
    assert.ok(Buffer.isBuffer(raw) && raw.toString('utf8').includes('Subject: Raw source\r\n'), raw.toString());
    assert.equal(raw.$response.headers['content-type'], 'message/rfc822');
    assert.ok((await sandbox.messages.raw(m.id, `ANN-${run}@example.net`)).equals(raw));
    await rejectsWith(sandbox.messages.raw(m.id, 'nobody@example.net'), 400, 'VALIDATION_ERROR');
  } finally {
    srv.close();
  }
});

test('inbound domains and routes; the raw fetch answers bytes or 404', { skip }, async () => {
  const name = `in-${run}.example.com`;
  const d = await live.inbound.createDomain(name);
  assert.equal(d.$response.status, 201);
  assert.equal(d.name, name);
  assert.equal(d.status, 'pending');
  assert.deepEqual(d.records.map((r) => r.type), ['MX', 'TXT']);
  assert.equal((await live.inbound.getDomain(d.id)).name, name);
  assert.ok((await live.inbound.listDomains({ limit: 200 })).data.some((x) => x.id === d.id));
  const w = await live.webhooks.create({ url: 'http://127.0.0.1:9/inbound', events: ['message.delivered'] });
  const r = await live.inbound.createRoute({ domain_id: d.id, pattern: 'support', webhook_id: w.id });
  assert.equal(r.pattern, 'support');
  assert.equal((await live.inbound.getRoute(r.id)).domain_id, d.id);
  assert.ok((await live.inbound.listRoutes()).data.some((x) => x.id === r.id));
  await rejectsWith(live.inbound.createRoute({ domain_id: d.id, pattern: 'support', webhook_id: w.id }), 409, 'CONFLICT');
  const other = new Mailbolt({ apiKey: env.MAILBOLT_OTHER_API_KEY });
  await rejectsWith(other.inbound.getDomain(d.id), 404, 'NOT_FOUND');
  await rejectsWith(live.inbound.raw(crypto.randomUUID()), 404, 'NOT_FOUND');
  assert.equal((await live.inbound.deleteRoute(r.id)).$response.status, 204);
  assert.equal((await live.inbound.deleteDomain(d.id)).$response.status, 204);
  await live.webhooks.delete(w.id);
});
