// The client's own behaviour against a local stub server: retries, Idempotency-Key reuse,
// errors, headers, configuration, the operation map. No Mailbolt server needed.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import tls from 'node:tls';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Mailbolt, MailboltError, ConnectionError, parseLinkHeader, parseRetryAfter, USER_AGENT } from '../index.js';

const here = path.dirname(fileURLToPath(import.meta.url));

// A stub answering from a script of { status, headers, body } per request; records every request.
function stub() {
  const seen = [];
  let script = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() });
      const a = script.shift() ?? { status: 500, body: { error: { code: 'INTERNAL_ERROR', message: 'script ran out' } } };
      const payload = a.body === undefined ? '' : JSON.stringify(a.body);
      res.writeHead(a.status, { 'Content-Type': 'application/json', 'X-Request-Id': `req-${seen.length}`,
        'X-Ratelimit-Limit': '10', 'X-Ratelimit-Remaining': '7', 'X-Ratelimit-Reset': '1795320001', ...(a.headers ?? {}) });
      res.end(payload);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    seen,
    play(s) { script = s; seen.length = 0; },
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((r) => server.close(r)),
  })));
}

const s = await stub();
after(() => s.close());
const sleeps = [];
const client = new Mailbolt({
  baseUrl: s.url + '/v1/', apiKey: 'svc_test_x', env: {},
  sleep: async (ms) => { sleeps.push(ms); }, random: () => 0.5,
});
const err = (status, code, extra = {}) => ({ status, body: { error: { code, message: `${code} happened`, ...extra } }, ...(extra.$ ?? {}) });
const accepted = { status: 202, body: { id: 'm1', status: 'queued', message_id_header: '<m1@x>', created_at: 'now' } };

test('a send carries the key, User-Agent, JSON body and a generated Idempotency-Key', async () => {
  s.play([accepted, accepted]);
  const m = await client.messages.send({ from: 'a@x.test', to: ['b@y.test'], subject: 's', text: 't' });
  assert.equal(m.id, 'm1');
  assert.deepEqual(Object.keys(m), ['id', 'status', 'message_id_header', 'created_at'], '$response is not enumerable');
  assert.equal(m.$response.status, 202);
  assert.equal(m.$response.requestId, 'req-1');
  assert.deepEqual(m.$response.rateLimit, { limit: 10, remaining: 7, reset: 1795320001 });
  assert.equal(client.lastResponse.requestId, 'req-1');
  const r = s.seen[0];
  assert.equal(r.method, 'POST');
  assert.equal(r.url, '/v1/messages', 'a trailing /v1/ in the base URL is folded');
  assert.equal(r.headers['x-api-key'], 'svc_test_x');
  assert.equal(r.headers['user-agent'], 'mailbolt-node/0.1.0');
  assert.equal(USER_AGENT, 'mailbolt-node/0.1.0');
  assert.equal(r.headers['content-type'], 'application/json');
  assert.deepEqual(JSON.parse(r.body), { from: 'a@x.test', to: ['b@y.test'], subject: 's', text: 't' });
  assert.match(r.headers['idempotency-key'], /^[0-9a-f-]{36}$/);
  await client.messages.send({ from: 'a@x.test', to: ['b@y.test'], subject: 's', text: 't' });
  assert.notEqual(s.seen[1].headers['idempotency-key'], r.headers['idempotency-key'], 'each send has its own key');
});

test('transient codes are retried with the same Idempotency-Key and body, honouring Retry-After', async () => {
  sleeps.length = 0;
  s.play([
    { ...err(429, 'RATE_LIMIT_EXCEEDED'), headers: { 'Retry-After': '2' } },
    err(503, 'SERVICE_UNAVAILABLE'),
    err(504, 'GATEWAY_TIMEOUT'),
    accepted,
  ]);
  const m = await client.messages.sendBatch([{ from: 'a@x.test', to: ['b@y.test'], subject: 's', text: 't' }]);
  assert.equal(m.$response.status, 202);
  assert.equal(s.seen.length, 4);
  assert.equal(new Set(s.seen.map((r) => r.headers['idempotency-key'])).size, 1, 'one key across the retries');
  assert.equal(new Set(s.seen.map((r) => r.body)).size, 1, 'the same bytes');
  assert.equal(s.seen[0].url, '/v1/messages/batch');
  assert.deepEqual(JSON.parse(s.seen[0].body), { messages: [{ from: 'a@x.test', to: ['b@y.test'], subject: 's', text: 't' }] });
  assert.equal(sleeps.length, 3);
  assert.ok(sleeps[0] >= 2000 && sleeps[0] <= 2250, `Retry-After 2 s honoured: ${sleeps[0]}`);
  assert.ok(sleeps[2] > sleeps[1], `exponential backoff: ${sleeps}`);
});

test('a caller-given Idempotency-Key is used', async () => {
  s.play([err(503, 'SERVICE_UNAVAILABLE'), accepted]);
  await client.messages.send({ from: 'a@x.test', to: ['b@y.test'] }, { idempotencyKey: 'mine-1' });
  assert.deepEqual(s.seen.map((r) => r.headers['idempotency-key']), ['mine-1', 'mine-1']);
});

test('retries stop at maxRetries and the last error is thrown', async () => {
  s.play([err(503, 'SERVICE_UNAVAILABLE'), err(503, 'SERVICE_UNAVAILABLE'), err(503, 'SERVICE_UNAVAILABLE'),
    err(503, 'SERVICE_UNAVAILABLE'), accepted]);
  await assert.rejects(client.account.get(), (e) => e.code === 'SERVICE_UNAVAILABLE' && e.transient);
  assert.equal(s.seen.length, 4, 'one try and 3 retries by default');
  s.play([err(503, 'SERVICE_UNAVAILABLE'), accepted]);
  await assert.rejects(client.account.get({ maxRetries: 0 }), (e) => e.status === 503);
  assert.equal(s.seen.length, 1);
  const one = new Mailbolt({ baseUrl: s.url, apiKey: 'k', env: {}, maxRetries: 1, sleep: async () => {} });
  s.play([err(504, 'GATEWAY_TIMEOUT'), err(504, 'GATEWAY_TIMEOUT'), accepted]);
  await assert.rejects(one.account.get(), (e) => e.code === 'GATEWAY_TIMEOUT');
  assert.equal(s.seen.length, 2);
});

test('nothing else is retried', async () => {
  for (const [status, code] of [[429, 'QUOTA_EXCEEDED'], [500, 'INTERNAL_ERROR'], [409, 'CONFLICT'], [400, 'VALIDATION_ERROR']]) {
    s.play([err(status, code), accepted]);
    await assert.rejects(client.messages.send({ from: 'a', to: ['b'] }), (e) => e.code === code);
    assert.equal(s.seen.length, 1, code);
  }
});

test('errors carry status, code, message, details, request id and rate limit', async () => {
  s.play([err(422, 'DOMAIN_NOT_VERIFIED', { details: { domain: 'x.test' } })]);
  const e = await client.messages.send({ from: 'a@x.test', to: ['b'] }).catch((x) => x);
  assert.ok(e instanceof MailboltError && e instanceof Error);
  assert.equal(e.name, 'MailboltError');
  assert.equal(e.status, 422);
  assert.equal(e.code, 'DOMAIN_NOT_VERIFIED');
  assert.equal(e.message, 'DOMAIN_NOT_VERIFIED happened');
  assert.deepEqual(e.details, { domain: 'x.test' });
  assert.equal(e.requestId, 'req-1');
  assert.equal(e.rateLimit.remaining, 7);
  assert.equal(e.transient, false);
  // An answer without the envelope still gets a code from its status.
  s.play([{ status: 502, body: 'bad gateway' }]);
  const e2 = await client.account.get().catch((x) => x);
  assert.equal(e2.status, 502);
  assert.equal(e2.code, 'HTTP_502');
});

test('a refused connection is a ConnectionError and is not retried', async () => {
  const dead = await stub();
  await dead.close();
  let slept = 0;
  const c = new Mailbolt({ baseUrl: dead.url, apiKey: 'k', env: {}, sleep: async () => { slept++; } });
  await assert.rejects(c.account.get(), (e) => e instanceof ConnectionError && e.status === 0);
  assert.equal(slept, 0);
});

test('pages: cursor mode follows cursor, page mode follows Link rel=next', async () => {
  s.play([
    { status: 200, body: { data: [1, 2], limit: 2, has_more: true, cursor: 'c1' } },
    { status: 200, body: { data: [3], limit: 2, has_more: false } },
  ]);
  const items = [];
  for await (const x of client.suppressions.all({ limit: 2 })) items.push(x);
  assert.deepEqual(items, [1, 2, 3]);
  assert.deepEqual(s.seen.map((r) => r.url), ['/v1/suppressions?limit=2', '/v1/suppressions?limit=2&cursor=c1']);
  s.play([
    { status: 200, body: { data: [1, 2], page: 1, limit: 2, total: 3 },
      headers: { Link: '</v1/events?limit=2&type=message.sent&page=2>; rel="next", </v1/events?limit=2&type=message.sent&page=1>; rel="first"' } },
    { status: 200, body: { data: [3], page: 2, limit: 2, total: 3 },
      headers: { Link: '</v1/events?limit=2&type=message.sent&page=1>; rel="prev", </v1/events?limit=2&type=message.sent&page=2>; rel="last"' } },
  ]);
  const pages = [];
  for await (const p of client.events.pages({ page: 1, limit: 2, type: 'message.sent' })) pages.push(p.page);
  assert.deepEqual(pages, [1, 2]);
  assert.deepEqual(s.seen.map((r) => r.url), ['/v1/events?page=1&limit=2&type=message.sent', '/v1/events?limit=2&type=message.sent&page=2']);
});

test('Link and Retry-After parsing', () => {
  assert.deepEqual(parseLinkHeader('</a?page=2>; rel="next", </a?page=1>; rel=first'), { next: '/a?page=2', first: '/a?page=1' });
  assert.deepEqual(parseLinkHeader(undefined), {});
  assert.equal(parseRetryAfter('3'), 3000);
  assert.equal(parseRetryAfter(new Date(10_000).toUTCString(), 4_000), 6000);
  assert.equal(parseRetryAfter('soon'), null);
});

test('configuration from the environment, TLS 1.2 minimum, extra CA roots', () => {
  const c = new Mailbolt({ env: { MAILBOLT_API_KEY: 'svc_live_env', MAILBOLT_BASE_URL: 'https://mail.example.test/' } });
  assert.equal(c.apiKey, 'svc_live_env');
  assert.equal(c.baseUrl, 'https://mail.example.test');
  assert.equal(c.maxRetries, 3);
  assert.equal(c._agent.options.minVersion, 'TLSv1.2');
  assert.throws(() => new Mailbolt({ env: {} }), /MAILBOLT_BASE_URL/);
  assert.throws(() => new Mailbolt({ env: { MAILBOLT_BASE_URL: 'https://x.test', MAILBOLT_CA_FILE: path.join(here, 'no-such.pem') } }), /ENOENT/);
  const pem = tls.rootCertificates[0];
  const tmp = fs.mkdtempSync(path.join(process.env.TMPDIR || '/tmp', 'mbnode-'));
  fs.writeFileSync(path.join(tmp, 'ca.pem'), pem);
  const withCa = new Mailbolt({ env: { MAILBOLT_BASE_URL: 'https://x.test', MAILBOLT_CA_FILE: path.join(tmp, 'ca.pem') } });
  assert.ok(withCa._agent.options.ca.includes(pem), 'the extra root is trusted');
  assert.ok(withCa._agent.options.ca.length > 1, 'the default roots are kept');
  fs.rmSync(tmp, { recursive: true });
});

test('operations.json maps every client operation of web/openapi.json to a method', () => {
  const spec = JSON.parse(fs.readFileSync(path.join(here, '../../../web/openapi.json'), 'utf8'));
  const ops = new Set();
  for (const item of Object.values(spec.paths)) {
    for (const [m, op] of Object.entries(item)) {
      if (['get', 'post', 'put', 'patch', 'delete'].includes(m) && op['x-client'] !== false) ops.add(op.operationId);
    }
  }
  const map = JSON.parse(fs.readFileSync(path.join(here, '../operations.json'), 'utf8'));
  assert.deepEqual(Object.keys(map).sort(), [...ops].sort());
  const c = new Mailbolt({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k', env: {} });
  for (const [op, name] of Object.entries(map)) {
    const parts = name.split('.');
    assert.equal(parts.shift(), 'client', op);
    let v = c;
    for (const p of parts) v = v?.[p];
    assert.equal(typeof v, 'function', `${op} → ${name}`);
  }
});
