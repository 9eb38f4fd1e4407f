// Type declarations for the Mailbolt Node.js client (hand-written; index.js is the source).

/// <reference types="node" />
import type { Agent } from 'node:http';

export const VERSION: string;
export const USER_AGENT: string;
export const TRANSIENT_CODES: readonly ['RATE_LIMIT_EXCEEDED', 'SERVICE_UNAVAILABLE', 'GATEWAY_TIMEOUT'];

/** One change in the account's audit log. */
export interface AuditEntry {
  id: string;
  actor: string;
  actor_kind: 'session' | 'person' | 'api_key' | 'operator';
  action: string;
  target: string;
  source: string;
  created_at: string;
}

export interface RateLimit {
  /** X-RateLimit-Limit: requests per second allowed. */
  limit: number | null;
  /** X-RateLimit-Remaining: requests left in the current second. */
  remaining: number | null;
  /** X-RateLimit-Reset: Unix time (seconds) the window ends. */
  reset: number | null;
}

/** Metadata of one HTTP answer. */
export interface ResponseInfo {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string | string[] | undefined>;
  requestId: string | null;
  rateLimit: RateLimit;
  /** True when the answer is a stored idempotent replay (Idempotent-Replayed: true). */
  replayed: boolean;
  /** The Link header (page mode) by rel: next, prev, first, last. */
  links: Record<string, string>;
}

/** Every method resolves to the decoded JSON body with its answer's metadata on `$response` (not enumerable). */
export type WithResponse<T> = T & { readonly $response: ResponseInfo };

export class MailboltError extends Error {
  status: number;
  code: string;
  message: string;
  details: Record<string, unknown> | null;
  requestId: string | null;
  headers: Record<string, string | string[] | undefined>;
  rateLimit: RateLimit;
  response?: ResponseInfo;
  readonly transient: boolean;
}

export class ConnectionError extends MailboltError {}

export interface ClientOptions {
  /** Default: MAILBOLT_API_KEY. */
  apiKey?: string;
  /** Default: MAILBOLT_BASE_URL (for example https://mail.example.com). A trailing /v1 is accepted. */
  baseUrl?: string;
  /** PEM file of extra trusted roots, added to the default roots. Default: MAILBOLT_CA_FILE. */
  caFile?: string;
  /** Extra trusted roots (PEM), added to the default roots. */
  ca?: string | Buffer | Array<string | Buffer>;
  /** Retries of a transient error (RATE_LIMIT_EXCEEDED, SERVICE_UNAVAILABLE, GATEWAY_TIMEOUT). Default 3. */
  maxRetries?: number;
  /** Per attempt, milliseconds. Default 30000. */
  timeout?: number;
  /** First backoff delay, milliseconds (doubles per retry, with jitter). Default 500. */
  retryBaseDelay?: number;
  /** Largest computed backoff, milliseconds. Default 30000. */
  retryMaxDelay?: number;
  /** Prepended to the User-Agent mailbolt-node/<version>. */
  userAgent?: string;
  /** Your own agent (TLS settings are then yours). */
  agent?: Agent;
  /** Environment to read the MAILBOLT_* variables from. Default process.env. */
  env?: Record<string, string | undefined>;
  /** The wait between retries (tests). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Jitter source in [0, 1) (tests). */
  random?: () => number;
}

export interface RequestOptions {
  /** Idempotency-Key for a write; sends and other writes generate one when absent, reused across retries. */
  idempotencyKey?: string;
  maxRetries?: number;
  timeout?: number;
  signal?: AbortSignal;
  headers?: Record<string, string>;
}

export interface RawRequestOptions extends RequestOptions {
  body?: unknown;
  /** Generate an Idempotency-Key when none is given. */
  idempotent?: boolean;
  /** false: send no X-API-Key. */
  auth?: boolean;
  /** true: return a 2xx answer's body as a string (the CSV export). */
  text?: boolean;
  /** true: answer the body as a Buffer (non-JSON answers). */
  raw?: boolean;
}

export interface PageParams {
  limit?: number;
  /** Page mode when given (1-based). */
  page?: number;
  /** Cursor mode: the `cursor` of the previous page. */
  cursor?: string;
  [filter: string]: string | number | boolean | Date | undefined | null | Array<string | number>;
}

export interface CursorPage<T> {
  data: T[];
  limit: number;
  has_more: boolean;
  cursor?: string;
}

export interface NumberedPage<T> {
  data: T[];
  page: number;
  limit: number;
  total: number;
}

export type Page<T> = CursorPage<T> | NumberedPage<T>;

export interface Listing<T> {
  /** One page: page mode with `page`, cursor mode otherwise. */
  list(params?: PageParams, options?: RequestOptions): Promise<WithResponse<Page<T>>>;
  /** Every page from `params` on, in the mode `params` selects. */
  pages(params?: PageParams, options?: RequestOptions): AsyncGenerator<WithResponse<Page<T>>, void, undefined>;
  /** Every item of every page. */
  all(params?: PageParams, options?: RequestOptions): AsyncGenerator<T, void, undefined>;
}

export type Json = Record<string, any>;

export interface SendMessageRequest {
  from: string;
  to: string[];
  cc?: string[];
  bcc?: string[];
  reply_to?: string[];
  subject?: string | null;
  html?: string | null;
  text?: string | null;
  headers?: Record<string, string> | null;
  attachments?: Array<{ filename: string; content?: string; content_type?: string; content_id?: string }> | null;
  template_id?: string;
  template_version?: number;
  template_data?: Record<string, unknown> | null;
  /** RFC 3339; a future time makes the message `scheduled`. */
  send_at?: string | null;
  campaign_id?: string | null;
  metadata?: Record<string, unknown> | null;
  tags?: string[] | null;
  tracking?: { opens?: boolean; clicks?: boolean } | null;
  ip_pool?: string | null;
  unsubscribe?: unknown;
  [field: string]: unknown;
}

export interface AcceptedMessage {
  id: string;
  status: 'queued' | 'scheduled' | 'suppressed' | string;
  message_id_header: string;
  created_at: string;
  [field: string]: unknown;
}

export interface Message extends Json {
  id: string;
  status: string;
}

export class Mailbolt {
  constructor(options?: ClientOptions);
  readonly apiKey: string;
  readonly baseUrl: string;
  maxRetries: number;
  timeout: number;
  readonly userAgent: string;
  /** Metadata of the last answer this client received. */
  lastResponse: ResponseInfo | null;

  /** One raw call (path starts with /v1), with the same retries and errors as the methods. */
  request<T = Json>(method: string, path: string, options?: RawRequestOptions): Promise<WithResponse<T>>;

  account: {
    get(options?: RequestOptions): Promise<WithResponse<Json>>;
    /** One page of the audit log, newest first: { id, actor, actor_kind, action, target, source, created_at }. */
    auditLog(params?: PageParams, options?: RequestOptions): Promise<WithResponse<Page<AuditEntry>>>;
    /** Every page of the audit log from params on. */
    auditLogPages(params?: PageParams, options?: RequestOptions): AsyncGenerator<WithResponse<Page<AuditEntry>>, void, undefined>;
  };
  messages: Listing<Message> & {
    send(message: SendMessageRequest, options?: RequestOptions): Promise<WithResponse<AcceptedMessage>>;
    /** An array of messages, or { messages: [...] }. */
    sendBatch(messages: SendMessageRequest[] | { messages: SendMessageRequest[] }, options?: RequestOptions): Promise<WithResponse<{ data: AcceptedMessage[] }>>;
    get(id: string, options?: RequestOptions): Promise<WithResponse<Message>>;
    /** The message's source (RFC 5322 bytes) as sent to one recipient; recipient may be omitted when there is one. */
    raw(id: string, recipient?: string, options?: RequestOptions): Promise<WithResponse<Buffer>>;
    cancel(id: string, options?: RequestOptions): Promise<WithResponse<Message>>;
  };
  events: Listing<Json>;
  apiKeys: Listing<Json> & {
    create(key: { name: string; scopes?: string[]; [k: string]: unknown }, options?: RequestOptions): Promise<WithResponse<Json>>;
    get(id: string, options?: RequestOptions): Promise<WithResponse<Json>>;
    revoke(id: string, options?: RequestOptions): Promise<WithResponse<Json>>;
  };
  suppressions: Listing<Json> & {
    add(suppression: { recipient?: string; email?: string; reason?: string; stream?: string }, options?: RequestOptions): Promise<WithResponse<Json>>;
    delete(recipient: string, options?: RequestOptions): Promise<WithResponse<Json>>;
    /** DELETE /v1/suppressions/{recipient}?stream=: only that stream's entry. */
    deleteFromStream(recipient: string, stream: 'transactional' | 'broadcast', options?: RequestOptions): Promise<WithResponse<Json>>;
    /** POST /v1/suppressions/import: up to 10,000, all or nothing. */
    import(
      suppressions: Array<{ recipient?: string; email?: string; reason?: string; stream?: string }>,
      options?: RequestOptions,
    ): Promise<WithResponse<{ added: number; already_present: number }>>;
    /** GET /v1/suppressions/export: the whole list as CSV text (recipient,reason,stream). */
    export(params?: { stream?: string }, options?: RequestOptions): Promise<string>;
  };
  domains: Listing<Json> & {
    /** A name, or { name, dkim_algorithm }. */
    create(domain: string | { name: string; dkim_algorithm?: string }, options?: RequestOptions): Promise<WithResponse<Json>>;
    get(id: string, options?: RequestOptions): Promise<WithResponse<Json>>;
    delete(id: string, options?: RequestOptions): Promise<WithResponse<Json>>;
    verify(id: string, options?: RequestOptions): Promise<WithResponse<Json>>;
    rotateDkim(id: string, params?: { dkim_algorithm?: string }, options?: RequestOptions): Promise<WithResponse<Json>>;
  };
  templates: Listing<Json> & {
    create(template: { name: string; subject: string; html?: string | null; text?: string | null; strict?: boolean | null }, options?: RequestOptions): Promise<WithResponse<Json>>;
    get(id: string, params?: { version?: number }, options?: RequestOptions): Promise<WithResponse<Json>>;
    update(id: string, template: Json, options?: RequestOptions): Promise<WithResponse<Json>>;
    render(id: string, params?: { data?: Record<string, unknown> | null; version?: number }, options?: RequestOptions): Promise<WithResponse<Json>>;
    listVersions(id: string, params?: PageParams, options?: RequestOptions): Promise<WithResponse<Page<Json>>>;
    versionPages(id: string, params?: PageParams, options?: RequestOptions): AsyncGenerator<WithResponse<Page<Json>>, void, undefined>;
  };
  webhooks: Listing<Json> & {
    create(webhook: { url: string; events: string[]; description?: string; [k: string]: unknown }, options?: RequestOptions): Promise<WithResponse<Json>>;
    get(id: string, options?: RequestOptions): Promise<WithResponse<Json>>;
    delete(id: string, options?: RequestOptions): Promise<WithResponse<Json>>;
    /** Changes url, events, description or enabled; the secret is kept. */
    update(id: string, changes: { url?: string; events?: string[]; description?: string; enabled?: boolean }, options?: RequestOptions): Promise<WithResponse<Json>>;
    /** Sends a signed webhook.test event now: { event_id, success, status_code, error, latency_ms, response, ... }. */
    test(id: string, options?: RequestOptions): Promise<WithResponse<Json>>;
    rotateSecret(id: string, options?: RequestOptions): Promise<WithResponse<Json>>;
    listDeliveries(id: string, params?: PageParams, options?: RequestOptions): Promise<WithResponse<Page<Json>>>;
    deliveryPages(id: string, params?: PageParams, options?: RequestOptions): AsyncGenerator<WithResponse<Page<Json>>, void, undefined>;
    replayEvent(webhookId: string, eventId: string, options?: RequestOptions): Promise<WithResponse<Json>>;
    verify: typeof verify;
  };
  team: Listing<Json> & {
    invite(member: { email: string; [k: string]: unknown }, options?: RequestOptions): Promise<WithResponse<Json>>;
  };
  analytics: {
    summary(params?: { from?: string | Date; to?: string | Date; campaign_id?: string; domain?: string }, options?: RequestOptions): Promise<WithResponse<Json>>;
  };
  ips: {
    list(options?: RequestOptions): Promise<WithResponse<Json>>;
    listPools(options?: RequestOptions): Promise<WithResponse<Json>>;
  };
  grader: {
    /** Public: sent without the API key. A domain, or { domain, selectors }. */
    check(params: string | { domain: string; selectors?: string[] }, options?: RequestOptions): Promise<WithResponse<Json>>;
    submit(params: Json, options?: RequestOptions): Promise<WithResponse<Json>>;
    result(id: string, options?: RequestOptions): Promise<WithResponse<Json>>;
    history(params?: { page?: number; per_page?: number }, options?: RequestOptions): Promise<WithResponse<Json>>;
  };
  /** Inbound email: domains, routes from their addresses to webhooks, raw messages (docs/inbound.md). */
  inbound: {
    listDomains(params?: PageParams, options?: RequestOptions): Promise<WithResponse<Page<Json>>>;
    domainPages(params?: PageParams, options?: RequestOptions): AsyncGenerator<WithResponse<Page<Json>>, void, undefined>;
    /** A name, or { name }. The answer names the MX and TXT records to publish. */
    createDomain(domain: string | { name: string }, options?: RequestOptions): Promise<WithResponse<Json>>;
    getDomain(id: string, options?: RequestOptions): Promise<WithResponse<Json>>;
    deleteDomain(id: string, options?: RequestOptions): Promise<WithResponse<Json>>;
    verifyDomain(id: string, options?: RequestOptions): Promise<WithResponse<Json>>;
    listRoutes(params?: PageParams, options?: RequestOptions): Promise<WithResponse<Page<Json>>>;
    routePages(params?: PageParams, options?: RequestOptions): AsyncGenerator<WithResponse<Page<Json>>, void, undefined>;
    createRoute(route: { domain_id: string; pattern: string; webhook_id: string }, options?: RequestOptions): Promise<WithResponse<Json>>;
    getRoute(id: string, options?: RequestOptions): Promise<WithResponse<Json>>;
    deleteRoute(id: string, options?: RequestOptions): Promise<WithResponse<Json>>;
    /** The message exactly as received (message/rfc822). */
    raw(id: string, options?: RequestOptions): Promise<Buffer>;
  };
}

export default Mailbolt;

export function parseLinkHeader(value: string | undefined | null): Record<string, string>;
export function parseRetryAfter(value: string | undefined | null, nowMs?: number): number | null;

// Webhooks (spec §6)

export const SIGNATURE_HEADER: 'X-Service-Signature';
export const TIMESTAMP_HEADER: 'X-Service-Timestamp';
export const DEFAULT_TOLERANCE_SECONDS: 300;

export type WebhookHeaders =
  | Record<string, string | string[] | undefined>
  | { get(name: string): string | null | undefined }
  | string;

export interface VerifyOptions {
  /** The clock: Unix seconds, a Date, or a function answering Unix seconds. Default: now. */
  now?: number | Date | (() => number);
  /** Seconds; default 300. May be widened, never disabled. */
  tolerance?: number;
}

/** A Base64 secret as the API shows it; a Buffer or Uint8Array is taken as the already-decoded key bytes. */
export type Secret = string | Buffer | Uint8Array;

export class WebhookVerificationError extends Error {
  reason: 'missing_signature' | 'malformed_signature' | 'timestamp_mismatch' | 'stale' | 'no_secret' | 'mismatch';
  /** The answer to give: 400 for a stale timestamp, 401 otherwise. */
  status: 400 | 401;
}

/**
 * True when some v1 of X-Service-Signature matches HMAC-SHA256(`${t}.${rawBody}`) under one of the
 * Base64 secrets and t is within the tolerance of the clock. Pass the raw body, never re-serialised JSON.
 * Secrets may be followed by a VerifyOptions object.
 */
export function verify(body: Buffer | Uint8Array | string, headers: WebhookHeaders, ...secretsAndOptions: Array<Secret | Secret[] | VerifyOptions>): boolean;
/** Like verify, but throws WebhookVerificationError (with reason and status) instead of answering false. */
export function verifyOrThrow(body: Buffer | Uint8Array | string, headers: WebhookHeaders, ...secretsAndOptions: Array<Secret | Secret[] | VerifyOptions>): true;
/** The X-Service-Signature value for a body (to test a receiver). */
export function sign(body: Buffer | Uint8Array | string, secret: string, timestamp?: number): string;
