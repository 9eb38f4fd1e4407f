// Mailbolt client for Node.js (>= 20). ESM, standard library only.
//
// const client = new Mailbolt();                       // MAILBOLT_API_KEY, MAILBOLT_BASE_URL, MAILBOLT_CA_FILE
// const msg = await client.messages.send({ from, to: [rcpt], subject, text });
// for await (const page of client.messages.pages({ limit: 100 })) { ... }
// verify(rawBody, req.headers, secret)                  // webhook signature, spec §6

import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import fs from 'node:fs';
import crypto from 'node:crypto';

export const VERSION = '0.1.0';
export const USER_AGENT = `mailbolt-node/${VERSION}`;

/** The error codes that are retried (spec §7): nothing else is. */
export const TRANSIENT_CODES = Object.freeze(['RATE_LIMIT_EXCEEDED', 'SERVICE_UNAVAILABLE', 'GATEWAY_TIMEOUT']);

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_RETRIES = 3;
const DEFAULT_RETRY_BASE_MS = 500;
const DEFAULT_RETRY_MAX_MS = 30_000;

// ---------------------------------------------------------------------------
// Errors

/** An error answer of the API (the §7 envelope), or a transport failure (status 0). */
export class MailboltError extends Error {
  constructor({ status, code, message, details, requestId, headers, rateLimit, cause } = {}) {
    super(message || code || 'mailbolt request failed', cause ? { cause } : undefined);
    this.name = 'MailboltError';
    this.status = status ?? 0;
    this.code = code ?? 'UNKNOWN';
    this.details = details ?? null;
    this.requestId = requestId ?? null;
    this.headers = headers ?? {};
    this.rateLimit = rateLimit ?? { limit: null, remaining: null, reset: null };
  }

  /** True for the codes the client retries (RATE_LIMIT_EXCEEDED, SERVICE_UNAVAILABLE, GATEWAY_TIMEOUT). */
  get transient() {
    return TRANSIENT_CODES.includes(this.code);
  }
}

/** A transport failure: connection refused, TLS failure, timeout. Status 0, not retried. */
export class ConnectionError extends MailboltError {
  constructor(message, cause) {
    super({ status: 0, code: 'CONNECTION_ERROR', message, cause });
    this.name = 'ConnectionError';
  }
}

// Codes by status for an answer without the envelope (a proxy's 503, say).
const STATUS_CODES = {
  400: 'VALIDATION_ERROR', 401: 'UNAUTHORIZED', 403: 'FORBIDDEN', 404: 'NOT_FOUND', 409: 'CONFLICT',
  410: 'GONE', 413: 'BODY_TOO_LARGE', 422: 'UNPROCESSABLE', 429: 'RATE_LIMIT_EXCEEDED',
  500: 'INTERNAL_ERROR', 503: 'SERVICE_UNAVAILABLE', 504: 'GATEWAY_TIMEOUT',
};

// ---------------------------------------------------------------------------
// Answers

function intOrNull(v) {
  if (v === undefined || v === null || v === '') return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

function rateLimitOf(headers) {
  return {
    limit: intOrNull(headers['x-ratelimit-limit']),
    remaining: intOrNull(headers['x-ratelimit-remaining']),
    reset: intOrNull(headers['x-ratelimit-reset']),
  };
}

/** Parses an RFC 8288 Link header into { rel: url }. */
export function parseLinkHeader(value) {
  const out = {};
  if (!value) return out;
  for (const part of String(value).split(/,(?=\s*<)/)) {
    const m = /^\s*<([^>]*)>\s*(.*)$/.exec(part);
    if (!m) continue;
    const rel = /(?:^|;)\s*rel\s*=\s*"?([^";]+)"?/i.exec(m[2]);
    if (!rel) continue;
    for (const r of rel[1].trim().split(/\s+/)) out[r.toLowerCase()] = m[1];
  }
  return out;
}

class ResponseInfo {
  constructor(status, headers) {
    this.status = status;
    this.headers = headers; // lower-case names
    this.requestId = headers['x-request-id'] ?? null;
    this.rateLimit = rateLimitOf(headers);
    this.replayed = String(headers['idempotent-replayed'] ?? '').toLowerCase() === 'true';
    this.links = parseLinkHeader(headers['link']);
  }
}

// Every method returns the decoded JSON body with the answer's metadata on a
// non-enumerable `$response` (status, headers, requestId, rateLimit, replayed, links).
function withResponse(body, info) {
  const value = body !== null && typeof body === 'object' ? body : {};
  Object.defineProperty(value, '$response', { value: info, enumerable: false, configurable: true });
  return value;
}

// ---------------------------------------------------------------------------
// Configuration

function trimBase(url) {
  let u = String(url).trim().replace(/\/+$/, '');
  if (u.endsWith('/v1')) u = u.slice(0, -3);
  const parsed = new URL(u); // throws on garbage
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new TypeError(`mailbolt: baseUrl must be http(s), got ${parsed.protocol}`);
  }
  return u;
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve(); }, ms);
    function onAbort() { clearTimeout(t); reject(signal.reason); }
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Seconds (or an HTTP date) of a Retry-After header, as milliseconds; null when absent or unreadable. */
export function parseRetryAfter(value, nowMs = Date.now()) {
  if (value === undefined || value === null || value === '') return null;
  const s = String(value).trim();
  if (/^\d+(\.\d+)?$/.test(s)) return Math.round(Number(s) * 1000);
  const at = Date.parse(s);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

function queryString(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params ?? {})) {
    if (v === undefined || v === null || v === '') continue;
    if (Array.isArray(v)) for (const x of v) q.append(k, String(x));
    else if (v instanceof Date) q.append(k, v.toISOString());
    else q.append(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

const enc = encodeURIComponent;

// ---------------------------------------------------------------------------
// Client

export class Mailbolt {
  /**
   * @param {object} [options]
   * @param {string} [options.apiKey]      default MAILBOLT_API_KEY
   * @param {string} [options.baseUrl]     default MAILBOLT_BASE_URL
   * @param {string} [options.caFile]      PEM file of extra trusted roots; default MAILBOLT_CA_FILE
   * @param {string|Buffer|Array} [options.ca] extra trusted roots (PEM), added to the default roots
   * @param {number} [options.maxRetries]  retries of a transient error, default 3
   * @param {number} [options.timeout]     per attempt, ms, default 30000
   */
  constructor(options = {}) {
    const env = options.env ?? process.env;
    this.apiKey = options.apiKey ?? env.MAILBOLT_API_KEY ?? '';
    const base = options.baseUrl ?? env.MAILBOLT_BASE_URL;
    if (!base) throw new TypeError('mailbolt: no baseUrl given and MAILBOLT_BASE_URL is not set');
    this.baseUrl = trimBase(base);
    this.maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
    this.timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;
    this.retryBaseDelay = options.retryBaseDelay ?? DEFAULT_RETRY_BASE_MS;
    this.retryMaxDelay = options.retryMaxDelay ?? DEFAULT_RETRY_MAX_MS;
    this.userAgent = options.userAgent ? `${options.userAgent} ${USER_AGENT}` : USER_AGENT;
    this._sleep = options.sleep ?? sleep;
    this._random = options.random ?? Math.random;
    /** The metadata of the last answer (or null): status, headers, requestId, rateLimit. */
    this.lastResponse = null;

    const extraCa = [];
    const caFile = options.caFile ?? env.MAILBOLT_CA_FILE;
    if (caFile) extraCa.push(fs.readFileSync(caFile, 'utf8'));
    if (options.ca) extraCa.push(...(Array.isArray(options.ca) ? options.ca : [options.ca]).map(String));
    const url = new URL(this.baseUrl);
    this._transport = url.protocol === 'https:' ? https : http;
    if (options.agent) {
      this._agent = options.agent;
    } else if (url.protocol === 'https:') {
      // TLS 1.2 or newer (spec §5.10); extra roots are added to Node's bundled ones.
      this._agent = new https.Agent({
        minVersion: 'TLSv1.2',
        ca: extraCa.length ? [...tls.rootCertificates, ...extraCa] : undefined,
        keepAlive: false,
      });
    } else {
      this._agent = new http.Agent({ keepAlive: false });
    }

    const c = this;
    this.account = {
      get: (o) => c.request('GET', '/v1/account', { ...o }),
      // The account's changes, newest first (GET /v1/audit-log).
      auditLog: (params, o) => c._list('/v1/audit-log', params, o),
      auditLogPages: (params, o) => c._pages('/v1/audit-log', params, o),
    };
    this.messages = {
      send: (msg, o) => c.request('POST', '/v1/messages', { body: msg, idempotent: true, ...o }),
      sendBatch: (messages, o) => c.request('POST', '/v1/messages/batch', {
        body: Array.isArray(messages) ? { messages } : messages, idempotent: true, ...o,
      }),
      get: (id, o) => c.request('GET', `/v1/messages/${enc(id)}`, { ...o }),
      raw: (id, recipient, o) => c.request('GET', `/v1/messages/${enc(id)}/raw${queryString({ recipient })}`, { raw: true, ...o }),
      cancel: (id, o) => c.request('POST', `/v1/messages/${enc(id)}/cancel`, { idempotent: true, ...o }),
      ...c._listing('/v1/messages'),
    };
    this.events = { ...c._listing('/v1/events') };
    this.apiKeys = {
      ...c._listing('/v1/api-keys'),
      create: (key, o) => c.request('POST', '/v1/api-keys', { body: key, idempotent: true, ...o }),
      get: (id, o) => c.request('GET', `/v1/api-keys/${enc(id)}`, { ...o }),
      revoke: (id, o) => c.request('DELETE', `/v1/api-keys/${enc(id)}`, { idempotent: true, ...o }),
    };
    this.suppressions = {
      ...c._listing('/v1/suppressions'),
      add: (s, o) => c.request('POST', '/v1/suppressions', { body: s, idempotent: true, ...o }),
      delete: (recipient, o) => c.request('DELETE', `/v1/suppressions/${enc(recipient)}`, { idempotent: true, ...o }),
      // Only the recipient's entry for one stream (transactional or broadcast).
      deleteFromStream: (recipient, stream, o) =>
        c.request('DELETE', `/v1/suppressions/${enc(recipient)}${queryString({ stream })}`, { idempotent: true, ...o }),
      // Up to 10,000 at once, all or nothing: { added, already_present }.
      import: (list, o) => c.request('POST', '/v1/suppressions/import', {
        body: Array.isArray(list) ? { suppressions: list } : list, idempotent: true, ...o,
      }),
      // The whole list as CSV text (recipient,reason,stream), the format import takes.
      export: (params, o) => c.request('GET', `/v1/suppressions/export${queryString(params)}`, { text: true, ...o }),
    };
    this.domains = {
      ...c._listing('/v1/domains'),
      create: (d, o) => c.request('POST', '/v1/domains', { body: typeof d === 'string' ? { name: d } : d, idempotent: true, ...o }),
      get: (id, o) => c.request('GET', `/v1/domains/${enc(id)}`, { ...o }),
      delete: (id, o) => c.request('DELETE', `/v1/domains/${enc(id)}`, { idempotent: true, ...o }),
      verify: (id, o) => c.request('POST', `/v1/domains/${enc(id)}/verify`, { idempotent: true, ...o }),
      rotateDkim: (id, params, o) => c.request('POST', `/v1/domains/${enc(id)}/dkim/rotate`, { body: params ?? {}, idempotent: true, ...o }),
    };
    this.templates = {
      ...c._listing('/v1/templates'),
      create: (t, o) => c.request('POST', '/v1/templates', { body: t, idempotent: true, ...o }),
      get: (id, params, o) => c.request('GET', `/v1/templates/${enc(id)}${queryString(params)}`, { ...o }),
      update: (id, t, o) => c.request('PUT', `/v1/templates/${enc(id)}`, { body: t, idempotent: true, ...o }),
      render: (id, params, o) => c.request('POST', `/v1/templates/${enc(id)}/render`, { body: params ?? {}, idempotent: true, ...o }),
      listVersions: (id, params, o) => c._list(`/v1/templates/${enc(id)}/versions`, params, o),
      versionPages: (id, params, o) => c._pages(`/v1/templates/${enc(id)}/versions`, params, o),
    };
    this.webhooks = {
      ...c._listing('/v1/webhooks'),
      create: (w, o) => c.request('POST', '/v1/webhooks', { body: w, idempotent: true, ...o }),
      get: (id, o) => c.request('GET', `/v1/webhooks/${enc(id)}`, { ...o }),
      delete: (id, o) => c.request('DELETE', `/v1/webhooks/${enc(id)}`, { idempotent: true, ...o }),
      update: (id, changes, o) => c.request('PATCH', `/v1/webhooks/${enc(id)}`, { body: changes, idempotent: true, ...o }),
      test: (id, o) => c.request('POST', `/v1/webhooks/${enc(id)}/test`, { body: {}, idempotent: true, ...o }),
      rotateSecret: (id, o) => c.request('POST', `/v1/webhooks/${enc(id)}/rotate-secret`, { body: {}, idempotent: true, ...o }),
      listDeliveries: (id, params, o) => c._list(`/v1/webhooks/${enc(id)}/deliveries`, params, o),
      deliveryPages: (id, params, o) => c._pages(`/v1/webhooks/${enc(id)}/deliveries`, params, o),
      replayEvent: (id, eventId, o) => c.request('POST', `/v1/webhooks/${enc(id)}/events/${enc(eventId)}/replay`, { body: {}, idempotent: true, ...o }),
      verify,
    };
    this.team = {
      ...c._listing('/v1/team'),
      invite: (m, o) => c.request('POST', '/v1/team/invite', { body: m, idempotent: true, ...o }),
    };
    this.analytics = {
      summary: (params, o) => c.request('GET', `/v1/analytics/summary${queryString(params)}`, { ...o }),
    };
    this.ips = {
      list: (o) => c.request('GET', '/v1/ips', { ...o }),
      listPools: (o) => c.request('GET', '/v1/ips/pools', { ...o }),
    };
    this.grader = {
      check: (params, o) => c.request('POST', '/v1/grader/check', {
        body: typeof params === 'string' ? { domain: params } : params, auth: false, ...o,
      }),
      submit: (params, o) => c.request('POST', '/v1/grader/submit', { body: params, idempotent: true, ...o }),
      result: (id, o) => c.request('GET', `/v1/grader/results/${enc(id)}`, { ...o }),
      history: (params, o) => c.request('GET', `/v1/grader/history${queryString(params)}`, { ...o }),
    };
    // Inbound email (docs/inbound.md): domains, routes to webhooks, raw messages.
    this.inbound = {
      listDomains: (params, o) => c._list('/v1/inbound/domains', params, o),
      domainPages: (params, o) => c._pages('/v1/inbound/domains', params, o),
      createDomain: (d, o) => c.request('POST', '/v1/inbound/domains', { body: typeof d === 'string' ? { name: d } : d, idempotent: true, ...o }),
      getDomain: (id, o) => c.request('GET', `/v1/inbound/domains/${enc(id)}`, { ...o }),
      deleteDomain: (id, o) => c.request('DELETE', `/v1/inbound/domains/${enc(id)}`, { idempotent: true, ...o }),
      verifyDomain: (id, o) => c.request('POST', `/v1/inbound/domains/${enc(id)}/verify`, { idempotent: true, ...o }),
      listRoutes: (params, o) => c._list('/v1/inbound/routes', params, o),
      routePages: (params, o) => c._pages('/v1/inbound/routes', params, o),
      createRoute: (r, o) => c.request('POST', '/v1/inbound/routes', { body: r, idempotent: true, ...o }),
      getRoute: (id, o) => c.request('GET', `/v1/inbound/routes/${enc(id)}`, { ...o }),
      deleteRoute: (id, o) => c.request('DELETE', `/v1/inbound/routes/${enc(id)}`, { idempotent: true, ...o }),
      /** The message exactly as received (message/rfc822), as a Buffer. */
      raw: (id, o) => c.request('GET', `/v1/inbound/messages/${enc(id)}/raw`, { raw: true, ...o }),
    };
  }

  _listing(path) {
    return {
      list: (params, o) => this._list(path, params, o),
      pages: (params, o) => this._pages(path, params, o),
      all: (params, o) => this._all(path, params, o),
    };
  }

  _list(path, params, o) {
    return this.request('GET', `${path}${queryString(params)}`, { ...o });
  }

  // Every page from params on. With `page` in params: page mode, following the
  // Link header's rel="next". Without: cursor mode, following `cursor` while has_more.
  async *_pages(path, params = {}, o) {
    const q = { ...params };
    if (q.page !== undefined && q.page !== null && q.page !== '') {
      let target = `${path}${queryString(q)}`;
      for (;;) {
        const page = await this.request('GET', target, { ...o });
        yield page;
        const next = page.$response.links.next;
        if (!next || !Array.isArray(page.data) || page.data.length === 0) return;
        const u = new URL(next, this.baseUrl + '/');
        target = u.pathname + u.search;
      }
    }
    delete q.page;
    for (;;) {
      const page = await this.request('GET', `${path}${queryString(q)}`, { ...o });
      yield page;
      if (!page.has_more || !page.cursor) return;
      q.cursor = page.cursor;
    }
  }

  async *_all(path, params, o) {
    for await (const page of this._pages(path, params, o)) yield* page.data ?? [];
  }

  /**
   * One API call, with retries of the transient codes. Paths start with /v1.
   * options: body (JSON-encoded once; the same bytes go out on every retry),
   * idempotencyKey (string; with idempotent: true one is generated when absent),
   * maxRetries, timeout (ms per attempt), signal (AbortSignal), headers, auth (false: no key),
   * text (true: a 2xx answer's body is returned as a string, for the CSV export).
   * raw (true: answer the body as a Buffer, for non-JSON answers).
   */
  async request(method, path, options = {}) {
    const headers = {
      'User-Agent': this.userAgent,
      Accept: 'application/json',
      ...(options.headers ?? {}),
    };
    if (options.auth !== false) {
      if (!this.apiKey) throw new TypeError('mailbolt: no apiKey given and MAILBOLT_API_KEY is not set');
      headers['X-API-Key'] = this.apiKey;
    }
    let payload = null;
    if (options.body !== undefined && options.body !== null) {
      payload = Buffer.from(typeof options.body === 'string' ? options.body : JSON.stringify(options.body), 'utf8');
      headers['Content-Type'] = 'application/json';
    }
    const key = options.idempotencyKey ?? (options.idempotent ? crypto.randomUUID() : undefined);
    if (key) headers['Idempotency-Key'] = key;
    const maxRetries = options.maxRetries ?? this.maxRetries;
    const url = new URL(this.baseUrl + path);

    for (let attempt = 0; ; attempt++) {
      const res = await this._send(method, url, headers, payload, options);
      const info = new ResponseInfo(res.status, res.headers);
      this.lastResponse = info;
      let body = null;
      if (res.body.length) {
        try { body = JSON.parse(res.body.toString('utf8')); } catch { body = null; }
      }
      if (res.status < 400 && options.text) return res.body.toString('utf8');
      if (res.status < 400) return withResponse(options.raw ? res.body : body, info);

      const env = body && typeof body === 'object' && body.error && typeof body.error === 'object' ? body.error : null;
      const err = new MailboltError({
        status: res.status,
        code: env?.code ?? STATUS_CODES[res.status] ?? `HTTP_${res.status}`,
        message: env?.message ?? `HTTP ${res.status}`,
        details: env?.details ?? null,
        requestId: info.requestId,
        headers: info.headers,
        rateLimit: info.rateLimit,
      });
      err.response = info;
      if (!err.transient || attempt >= maxRetries) throw err;
      await this._sleep(this._retryDelay(attempt, res.headers['retry-after']), options.signal);
    }
  }

  // Exponential backoff with full jitter; Retry-After, when given, is the floor.
  _retryDelay(attempt, retryAfter) {
    const exp = Math.min(this.retryMaxDelay, this.retryBaseDelay * 2 ** attempt);
    const jittered = exp / 2 + this._random() * (exp / 2);
    const ra = parseRetryAfter(retryAfter);
    if (ra === null) return Math.round(jittered);
    // Honour the server's delay; add a little jitter so retrying clients spread out.
    return Math.round(Math.min(ra, this.retryMaxDelay * 4) + this._random() * Math.min(250, this.retryBaseDelay));
  }

  _send(method, url, headers, payload, options) {
    const timeout = options.timeout ?? this.timeout;
    return new Promise((resolve, reject) => {
      const h = { ...headers };
      if (payload) h['Content-Length'] = String(payload.length);
      let settled = false;
      const done = (fn, v) => { if (!settled) { settled = true; options.signal?.removeEventListener('abort', onAbort); fn(v); } };
      const req = this._transport.request(url, { method, headers: h, agent: this._agent }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => done(resolve, { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', (e) => done(reject, new ConnectionError(`mailbolt: reading the answer failed: ${e.message}`, e)));
      });
      req.setTimeout(timeout, () => req.destroy(new Error(`timed out after ${timeout} ms`)));
      req.on('error', (e) => done(reject, new ConnectionError(`mailbolt: ${method} ${url.pathname} failed: ${e.message}`, e)));
      function onAbort() { req.destroy(options.signal.reason instanceof Error ? options.signal.reason : new Error('aborted')); }
      if (options.signal) {
        if (options.signal.aborted) return onAbort();
        options.signal.addEventListener('abort', onAbort, { once: true });
      }
      req.end(payload ?? undefined);
    });
  }
}

export default Mailbolt;

// ---------------------------------------------------------------------------
// Webhook signatures (spec §6)

export const SIGNATURE_HEADER = 'X-Service-Signature';
export const TIMESTAMP_HEADER = 'X-Service-Timestamp';
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** Why a webhook request was refused; status is the answer the spec recommends (401, or 400 when stale). */
export class WebhookVerificationError extends Error {
  constructor(reason, message) {
    super(message);
    this.name = 'WebhookVerificationError';
    this.reason = reason; // 'missing_signature' | 'malformed_signature' | 'timestamp_mismatch' | 'stale' | 'no_secret' | 'mismatch'
    this.status = reason === 'stale' ? 400 : 401;
  }
}

function headerValue(headers, name) {
  if (headers === null || headers === undefined) return undefined;
  if (typeof headers === 'string') return name === SIGNATURE_HEADER ? headers : undefined;
  if (typeof headers.get === 'function') return headers.get(name) ?? undefined; // Headers, Map with exact case
  const lower = name.toLowerCase();
  for (const [k, v] of Object.entries(headers)) {
    if (k.toLowerCase() === lower) return Array.isArray(v) ? v.join(',') : v;
  }
  return undefined;
}

function splitSecretsAndOptions(args) {
  const secrets = [];
  let options = {};
  for (const a of args.flat()) {
    if (a === undefined || a === null) continue;
    if (typeof a === 'string' || Buffer.isBuffer(a) || a instanceof Uint8Array) secrets.push(a);
    else if (typeof a === 'object') options = { ...options, ...a };
  }
  return { secrets, options };
}

function nowSeconds(now) {
  if (now === undefined || now === null) return Math.floor(Date.now() / 1000);
  const v = typeof now === 'function' ? now() : now;
  if (v instanceof Date) return Math.floor(v.getTime() / 1000);
  return Math.floor(Number(v));
}

/**
 * Checks a webhook request and throws WebhookVerificationError when it fails.
 * body: the raw body (Buffer, Uint8Array or string, never re-serialised JSON).
 * headers: the request's headers (object, Headers) or the X-Service-Signature value itself.
 * secretsAndOptions: one or more Base64 secrets (or arrays of them), optionally followed by
 * { now: seconds | Date | () => seconds, tolerance: seconds (default 300) }.
 */
export function verifyOrThrow(body, headers, ...secretsAndOptions) {
  const { secrets, options } = splitSecretsAndOptions(secretsAndOptions);
  const tolerance = options.tolerance ?? DEFAULT_TOLERANCE_SECONDS;
  if (!(tolerance > 0)) throw new TypeError('mailbolt: the timestamp tolerance must be positive (it may be widened, never disabled)');
  const sig = headerValue(headers, SIGNATURE_HEADER);
  if (!sig) throw new WebhookVerificationError('missing_signature', `no ${SIGNATURE_HEADER} header`);
  let t = null;
  const v1 = [];
  for (const part of String(sig).split(',')) {
    const i = part.indexOf('=');
    if (i < 0) continue;
    const k = part.slice(0, i).trim();
    const v = part.slice(i + 1).trim();
    if (k === 't') t = v;
    else if (k === 'v1' && /^[0-9a-fA-F]{64}$/.test(v)) v1.push(Buffer.from(v.toLowerCase(), 'hex'));
  }
  if (t === null || !/^\d{1,15}$/.test(t) || v1.length === 0) {
    throw new WebhookVerificationError('malformed_signature', `${SIGNATURE_HEADER} has no t or no v1`);
  }
  const ts = headerValue(headers, TIMESTAMP_HEADER);
  if (ts !== undefined && String(ts).trim() !== t) {
    throw new WebhookVerificationError('timestamp_mismatch', `${TIMESTAMP_HEADER} differs from t`);
  }
  if (Math.abs(nowSeconds(options.now) - Number(t)) > tolerance) {
    throw new WebhookVerificationError('stale', `timestamp more than ${tolerance} s from the clock`);
  }
  if (secrets.length === 0) throw new WebhookVerificationError('no_secret', 'no webhook secret given');
  const raw = typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const signed = Buffer.concat([Buffer.from(`${t}.`, 'ascii'), raw]);
  let ok = false;
  for (const s of secrets) {
    const key = typeof s === 'string' ? Buffer.from(s.trim(), 'base64') : Buffer.from(s);
    const digest = crypto.createHmac('sha256', key).update(signed).digest();
    // Compare against every v1 without stopping early.
    for (const candidate of v1) ok = crypto.timingSafeEqual(digest, candidate) || ok;
  }
  if (!ok) throw new WebhookVerificationError('mismatch', 'no v1 signature matches the secrets');
  return true;
}

/** Like verifyOrThrow, but answers true or false. */
export function verify(body, headers, ...secretsAndOptions) {
  try {
    return verifyOrThrow(body, headers, ...secretsAndOptions);
  } catch (e) {
    if (e instanceof WebhookVerificationError) return false;
    throw e;
  }
}

/** The X-Service-Signature value for a body (for tests of a receiver). */
export function sign(body, secret, timestamp = Math.floor(Date.now() / 1000)) {
  const raw = typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body);
  const key = Buffer.from(secret, 'base64');
  const d = crypto.createHmac('sha256', key).update(Buffer.concat([Buffer.from(`${timestamp}.`), raw])).digest('hex');
  return `t=${timestamp},v1=${d}`;
}
