// HTTPS with an extra root from MAILBOLT_CA_FILE, against a local TLS stub with a throwaway
// certificate (made with openssl; skipped when openssl is missing).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { Mailbolt, ConnectionError } from '../index.js';

const hasOpenssl = spawnSync('openssl', ['version']).status === 0;
const skip = hasOpenssl ? false : 'openssl is not installed';
let dir;
let server;
let url;

before(async () => {
  if (skip) return;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailbolt-node-tls-'));
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'ca.pem'), '-days', '2', '-subj', '/CN=127.0.0.1',
    '-addext', 'subjectAltName=IP:127.0.0.1'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  server = https.createServer({ key: fs.readFileSync(path.join(dir, 'key.pem')), cert: fs.readFileSync(path.join(dir, 'ca.pem')) },
    (req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'X-Request-Id': 'tls-1' });
      res.end(JSON.stringify({ tls: req.socket.getProtocol() }));
    });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `https://127.0.0.1:${server.address().port}`;
});

after(async () => {
  if (server) await new Promise((r) => server.close(r));
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('an extra root from MAILBOLT_CA_FILE is trusted, over TLS 1.2 or newer', { skip }, async () => {
  const c = new Mailbolt({ env: { MAILBOLT_BASE_URL: url, MAILBOLT_API_KEY: 'k', MAILBOLT_CA_FILE: path.join(dir, 'ca.pem') } });
  const a = await c.account.get();
  assert.match(a.tls, /^TLSv1\.[23]$/);
  assert.equal(a.$response.requestId, 'tls-1');
});

test('without the extra root the certificate is refused', { skip }, async () => {
  const c = new Mailbolt({ env: { MAILBOLT_BASE_URL: url, MAILBOLT_API_KEY: 'k' } });
  await assert.rejects(c.account.get(), (e) => e instanceof ConnectionError && /certificate/i.test(e.message));
});
