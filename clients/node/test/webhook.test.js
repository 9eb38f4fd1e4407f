// Webhook signature verification (spec §6) against testdata/webhooks/signature.json. No server needed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { verify, verifyOrThrow, sign, WebhookVerificationError } from '../index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const vectorPath = process.env.MAILBOLT_WEBHOOK_VECTOR || path.join(here, '../../../testdata/webhooks/signature.json');
const V = JSON.parse(fs.readFileSync(vectorPath, 'utf8'));
const body = Buffer.from(V.body, 'utf8');
const at = { now: V.timestamp };
const headers = (sig, ts = String(V.timestamp)) => ({ 'X-Service-Signature': sig, 'X-Service-Timestamp': ts });

test('the vector verifies with its secret', () => {
  assert.equal(verify(body, headers(V.header), V.secret, at), true);
  assert.equal(verify(V.body, headers(V.header), V.secret, at), true, 'a string body too');
  assert.equal(verify(new Uint8Array(body), { 'x-service-signature': V.header }, V.secret, at), true, 'lower-case names, no timestamp header');
  assert.equal(verify(body, new Headers(headers(V.header)), V.secret, at), true, 'a fetch Headers object');
  assert.equal(sign(body, V.secret, V.timestamp), V.header);
});

test('a tampered body is refused', () => {
  const tampered = Buffer.from(V.body.replace('"m1"', '"m2"'));
  assert.equal(verify(tampered, headers(V.header), V.secret, at), false);
  assert.equal(verify(Buffer.concat([body, Buffer.from('\n')]), headers(V.header), V.secret, at), false, 'a trailing newline');
  assert.throws(() => verifyOrThrow(tampered, headers(V.header), V.secret, at),
    (e) => e instanceof WebhookVerificationError && e.reason === 'mismatch' && e.status === 401);
});

test('a wrong secret, a wrong signature or a missing header is refused', () => {
  assert.equal(verify(body, headers(V.header), V.previous_secret, at), false);
  assert.equal(verify(body, headers(V.header.replace(/.$/, (c) => (c === '0' ? '1' : '0'))), V.secret, at), false);
  assert.equal(verify(body, {}, V.secret, at), false);
  assert.equal(verify(body, headers(`t=${V.timestamp}`), V.secret, at), false, 'no v1');
  assert.equal(verify(body, headers(`v1=${V.signature}`), V.secret, at), false, 'no t');
  assert.equal(verify(body, headers(V.header, String(V.timestamp + 1)), V.secret, at), false, 'X-Service-Timestamp differs from t');
  assert.equal(verify(body, headers(V.header), at), false, 'no secret');
  // The text of the secret is not the key: the key is its Base64 decoding.
  assert.equal(verify(body, headers(V.header), Buffer.from(V.secret).toString('base64'), at), false);
});

test('a stale timestamp is refused either way of the 300 s window', () => {
  assert.equal(verify(body, headers(V.header), V.secret, { now: V.timestamp + 300 }), true, 'exactly 300 s late');
  assert.equal(verify(body, headers(V.header), V.secret, { now: V.timestamp - 300 }), true, 'exactly 300 s early');
  assert.equal(verify(body, headers(V.header), V.secret, { now: V.timestamp + 301 }), false);
  assert.equal(verify(body, headers(V.header), V.secret, { now: V.timestamp - 301 }), false);
  assert.equal(verify(body, headers(V.header), V.secret), false, 'against the real clock, long after the vector');
  assert.equal(verify(body, headers(V.header), V.secret, { now: () => V.timestamp + 10 }), true, 'a clock function');
  assert.equal(verify(body, headers(V.header), V.secret, { now: new Date(V.timestamp * 1000) }), true, 'a Date');
  assert.throws(() => verifyOrThrow(body, headers(V.header), V.secret, { now: V.timestamp + 3600 }),
    (e) => e.reason === 'stale' && e.status === 400);
  assert.equal(verify(body, headers(V.header), V.secret, { now: V.timestamp + 600, tolerance: 900 }), true, 'a widened window');
  assert.throws(() => verify(body, headers(V.header), V.secret, { now: V.timestamp, tolerance: 0 }), TypeError, 'never disabled');
});

test('rotation: several v1 values and several secrets', () => {
  const rot = headers(V.header_during_rotation);
  assert.equal(verify(body, rot, V.secret, at), true, 'the new secret');
  assert.equal(verify(body, rot, V.previous_secret, at), true, 'the previous secret');
  assert.equal(verify(body, rot, V.previous_secret, V.secret, at), true, 'both');
  assert.equal(verify(body, rot, [V.previous_secret, V.secret], at), true, 'an array of secrets');
  assert.equal(verify(body, headers(`t=${V.timestamp},v1=${V.previous_signature}`), V.secret, V.previous_secret, at), true,
    'a receiver holding both secrets accepts the previous one');
  assert.equal(verify(body, headers(`t=${V.timestamp},v1=${V.previous_signature}`), V.secret, at), false);
  assert.equal(verify(body, headers(`t=${V.timestamp},v0=abc,v1=${V.signature},x=1`), V.secret, at), true, 'unknown schemes ignored');
});

test('examples/run verify checks the vector', () => {
  const run = (input, extra = {}) => spawnSync(path.join(here, '../examples/run'), ['verify'], {
    input,
    encoding: 'utf8',
    env: {
      ...process.env,
      MAILBOLT_EXAMPLE_WEBHOOK_SECRET: `${V.previous_secret},${V.secret}`,
      MAILBOLT_EXAMPLE_SIGNATURE: V.header,
      MAILBOLT_EXAMPLE_TIMESTAMP: String(V.timestamp),
      MAILBOLT_EXAMPLE_NOW: String(V.timestamp + 5),
      ...extra,
    },
  });
  let r = run(body);
  assert.equal(r.stdout, 'valid\n', r.stderr);
  assert.equal(r.status, 0);
  r = run(Buffer.concat([body, Buffer.from(' ')]));
  assert.equal(r.stdout, 'invalid\n');
  assert.equal(r.status, 1);
  r = run(body, { MAILBOLT_EXAMPLE_NOW: String(V.timestamp + 301) });
  assert.equal(r.stdout, 'invalid\n');
  assert.equal(r.status, 1);
});
