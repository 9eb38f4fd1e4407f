"""The Mailbolt API client: ``Client`` and one resource object per area of the API."""

from __future__ import annotations

import http.client
import json
import os
import random
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
import warnings
from typing import Any, Callable, Dict, Iterator, Mapping, Optional

from ._response import Page, Result, header
from ._version import __version__
from .errors import TRANSIENT_CODES, MailboltConnectionError, error_for

DEFAULT_BASE_URL = "http://127.0.0.1:8080"
USER_AGENT = f"mailbolt-python/{__version__}"


def _tls_context(ca_file: Optional[str]) -> ssl.SSLContext:
    ctx = ssl.create_default_context()  # system roots, hostname checking on
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2  # spec §5.10: TLS 1.2 or newer
    if ca_file:
        ctx.load_verify_locations(cafile=ca_file)  # extra roots, added to the system's
    return ctx


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # The API never redirects; following one would resend the API key elsewhere.
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _fields(payload: Optional[Mapping[str, Any]], fields: Mapping[str, Any]) -> Dict[str, Any]:
    """A request body from a dict and/or keyword arguments; ``from_`` stands for ``from``."""
    out: Dict[str, Any] = dict(payload or {})
    for key, value in fields.items():
        out[key[:-1] if key.endswith("_") else key] = value
    return out


def _seg(value: Any) -> str:
    return urllib.parse.quote(str(value), safe="")


class Client:
    """A client of one Mailbolt server.

    Arguments fall back to the environment: ``api_key`` to ``MAILBOLT_API_KEY``,
    ``base_url`` to ``MAILBOLT_BASE_URL`` (default ``http://127.0.0.1:8080``), ``ca_file``
    (extra trusted roots, PEM) to ``MAILBOLT_CA_FILE``.

    ``max_retries`` (default 3) bounds the retries of the transient errors
    RATE_LIMIT_EXCEEDED, SERVICE_UNAVAILABLE and GATEWAY_TIMEOUT; they wait with
    exponential backoff and jitter, and never less than ``Retry-After``.
    """

    def __init__(
        self,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        *,
        ca_file: Optional[str] = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        max_retry_after: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.api_key = api_key if api_key is not None else os.environ.get("MAILBOLT_API_KEY")
        base = base_url or os.environ.get("MAILBOLT_BASE_URL") or DEFAULT_BASE_URL
        base = base.rstrip("/")
        if base.endswith("/v1"):
            base = base[:-3]
        self.base_url = base
        self.ssl_context = _tls_context(ca_file if ca_file is not None else os.environ.get("MAILBOLT_CA_FILE"))
        self.timeout = timeout
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.max_retry_after = max_retry_after
        self._sleep = sleep
        self._opener = urllib.request.build_opener(
            urllib.request.HTTPSHandler(context=self.ssl_context), _NoRedirect()
        )
        self._warned_deprecation = False

        self.account = Account(self)
        self.messages = Messages(self)
        self.events = Events(self)
        self.api_keys = ApiKeys(self)
        self.suppressions = Suppressions(self)
        self.domains = Domains(self)
        self.templates = Templates(self)
        self.webhooks = Webhooks(self)
        self.team = Team(self)
        self.analytics = Analytics(self)
        self.ips = Ips(self)
        self.grader = Grader(self)
        self.inbound = Inbound(self)

    # -- transport -----------------------------------------------------------------

    def _backoff(self, attempt: int, retry_after: Optional[float]) -> float:
        delay = min(self.backoff_max, self.backoff_base * (2 ** attempt))
        delay = delay / 2 + random.uniform(0, delay / 2)  # jitter: half fixed, half random
        if retry_after is not None:
            delay = max(delay, retry_after)  # never earlier than the server asked
        return delay

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        body: Any = None,
        idempotency_key: Optional[str] = None,
        auth: bool = True,
        page: bool = False,
        text: bool = False,
    ) -> Any:
        """Sends one API call (retrying transient errors) and returns its :class:`Result`
        (a :class:`Page` when ``page``; the body as a ``str`` when ``text``, for the CSV
        export), or raises an :class:`~mailbolt.errors.APIError`."""
        url = self.base_url + path
        if query:
            pairs = []
            for key, value in query.items():
                if value is None:
                    continue
                if isinstance(value, bool):
                    value = "true" if value else "false"
                if isinstance(value, (list, tuple)):
                    pairs.extend((key, str(v)) for v in value)
                else:
                    pairs.append((key, str(value)))
            if pairs:
                url += "?" + urllib.parse.urlencode(pairs)
        # Serialised once: a retry sends exactly the same bytes (the idempotency fingerprint).
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode("utf-8")
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if auth and self.api_key:
            headers["X-API-Key"] = self.api_key
        if data is not None:
            headers["Content-Type"] = "application/json"
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        attempt = 0
        while True:
            status, resp_headers, raw = self._send_once(method, url, data, headers)
            parsed: Any = None
            if raw:
                try:
                    parsed = json.loads(raw)
                except ValueError:
                    parsed = None
            self._check_deprecation(resp_headers)
            if 200 <= status < 300:
                if text:
                    return raw.decode("utf-8")
                result = (Page if page else Result)(parsed, status, resp_headers, attempt + 1)
                result.content = raw or b""
                return result
            err = error_for(status, parsed, header(resp_headers, "X-Request-Id"), resp_headers)
            if err.code not in TRANSIENT_CODES or attempt >= self.max_retries:
                raise err
            retry_after = err.retry_after
            if retry_after is not None and retry_after > self.max_retry_after:
                raise err
            self._sleep(self._backoff(attempt, retry_after))
            attempt += 1

    def _send_once(self, method: str, url: str, data: Optional[bytes], headers: Dict[str, str]):
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with self._opener.open(req, timeout=self.timeout) as resp:
                return resp.status, dict(resp.headers.items()), resp.read()
        except urllib.error.HTTPError as exc:
            try:
                raw = exc.read()
            finally:
                exc.close()
            return exc.code, dict(exc.headers.items()) if exc.headers else {}, raw
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            reason = getattr(exc, "reason", exc)
            raise MailboltConnectionError(f"{method} {url}: {reason}") from exc

    def _check_deprecation(self, headers: Mapping[str, str]) -> None:
        if not self._warned_deprecation and (header(headers, "Deprecation") or "").lower() == "true":
            self._warned_deprecation = True
            sunset = header(headers, "Sunset")
            warnings.warn(
                "this Mailbolt API version is deprecated" + (f"; sunset {sunset}" if sunset else ""),
                DeprecationWarning,
                stacklevel=4,
            )

    # -- pagination ----------------------------------------------------------------

    def paginate(self, list_method: Callable[..., Page], *args: Any, mode: str = "cursor", **query: Any) -> Iterator[Page]:
        """Yields every page of a list call, from the first (or ``page``/``cursor`` given)
        to the last. ``mode`` is ``"cursor"`` (the default; cheap at any depth) or
        ``"page"`` (page numbers, following the ``Link`` header's ``next``).

            for page in client.paginate(client.suppressions.list, limit=100):
                for item in page.data: ...
        """
        if mode == "page":
            number = int(query.pop("page", None) or 1)
            query.pop("cursor", None)
            while True:
                page = list_method(*args, page=number, **query)
                yield page
                if not page.data:
                    return
                if "next" in page.links:
                    number += 1
                    continue
                total = page.get("total")
                size = page.get("limit") or page.get("per_page")
                if page.header("Link") is None and isinstance(total, int) and isinstance(size, int) and number * size < total:
                    number += 1
                    continue
                return
        if mode != "cursor":
            raise ValueError('mode must be "cursor" or "page"')
        query.pop("page", None)
        cursor = query.pop("cursor", None)
        while True:
            page = list_method(*args, cursor=cursor, **query)
            yield page
            if not page.has_more or not page.cursor:
                return
            cursor = page.cursor

    def iterate(self, list_method: Callable[..., Page], *args: Any, mode: str = "cursor", **query: Any) -> Iterator[Any]:
        """Yields every item of every page (see :meth:`paginate`)."""
        for page in self.paginate(list_method, *args, mode=mode, **query):
            yield from page.data


class _Resource:
    def __init__(self, client: Client) -> None:
        self._client = client

    def _get(self, path: str, query: Optional[Mapping[str, Any]] = None, page: bool = False) -> Any:
        return self._client.request("GET", path, query=query, page=page)

    def _list(self, path: str, **query: Any) -> Page:
        return self._client.request("GET", path, query=query, page=True)

    def _write(self, method: str, path: str, body: Any = None, idempotency_key: Optional[str] = None, auth: bool = True) -> Result:
        return self._client.request(method, path, body=body, idempotency_key=idempotency_key, auth=auth)


class _Listable(_Resource):
    """A resource whose ``list`` pages: adds ``pages()`` and ``items()``."""

    def list(self, **query: Any) -> Page:  # pragma: no cover - overridden
        raise NotImplementedError

    def pages(self, *, mode: str = "cursor", **query: Any) -> Iterator[Page]:
        """Every page of ``list`` (see :meth:`Client.paginate`)."""
        return self._client.paginate(self.list, mode=mode, **query)

    def items(self, *, mode: str = "cursor", **query: Any) -> Iterator[Any]:
        """Every item of every page of ``list``."""
        return self._client.iterate(self.list, mode=mode, **query)


class Account(_Resource):
    def get(self) -> Result:
        """GET /v1/account."""
        return self._get("/v1/account")

    def audit_log(self, **query: Any) -> Page:
        """GET /v1/audit-log: the account's changes, newest first (``limit``, ``page`` or
        ``cursor``). Walk every page with ``client.paginate(client.account.audit_log)``."""
        return self._list("/v1/audit-log", **query)


class Messages(_Listable):
    def send(self, message: Optional[Mapping[str, Any]] = None, *, idempotency_key: Optional[str] = None, **fields: Any) -> Result:
        """POST /v1/messages. Give the message as a dict or as keywords (``from_`` for
        ``from``). An ``Idempotency-Key`` is generated when none is given and reused by
        every retry of this call."""
        key = idempotency_key or str(uuid.uuid4())
        return self._write("POST", "/v1/messages", _fields(message, fields), key)

    def send_batch(self, messages: Any, *, idempotency_key: Optional[str] = None) -> Result:
        """POST /v1/messages/batch with a list of messages; one generated
        ``Idempotency-Key`` for the whole batch unless given."""
        key = idempotency_key or str(uuid.uuid4())
        body = messages if isinstance(messages, Mapping) else {"messages": list(messages)}
        return self._write("POST", "/v1/messages/batch", body, key)

    def get(self, message_id: str) -> Result:
        """GET /v1/messages/{id}."""
        return self._get(f"/v1/messages/{_seg(message_id)}")

    def list(self, **query: Any) -> Page:
        """GET /v1/messages: ``limit``, ``page`` or ``cursor``, ``status``, ``campaign_id``,
        ``tag``, ``recipient``, ``since``, ``until``."""
        return self._list("/v1/messages", **query)

    def raw(self, message_id: str, recipient: Optional[str] = None) -> bytes:
        """GET /v1/messages/{id}/raw: the message's source (RFC 5322 bytes) exactly as
        sent to ``recipient``, with the DKIM-Signature of its latest attempt when it was
        signed. ``recipient`` may be left out when the message has exactly one."""
        return self._get(f"/v1/messages/{_seg(message_id)}/raw", {"recipient": recipient}).content

    def cancel(self, message_id: str, *, idempotency_key: Optional[str] = None) -> Result:
        """POST /v1/messages/{id}/cancel (a queued or scheduled message)."""
        return self._write("POST", f"/v1/messages/{_seg(message_id)}/cancel", None, idempotency_key)


class Events(_Listable):
    def list(self, **query: Any) -> Page:
        """GET /v1/events: ``type`` (a name or a list), ``message_id``, ``recipient``,
        ``since``, ``until`` and the paging parameters."""
        return self._list("/v1/events", **query)


class ApiKeys(_Listable):
    def list(self, **query: Any) -> Page:
        """GET /v1/api-keys."""
        return self._list("/v1/api-keys", **query)

    def create(self, key: Optional[Mapping[str, Any]] = None, *, idempotency_key: Optional[str] = None, **fields: Any) -> Result:
        """POST /v1/api-keys: ``name``, ``scopes``, ``mode``, ``expires_at``."""
        return self._write("POST", "/v1/api-keys", _fields(key, fields), idempotency_key)

    def get(self, key_id: str) -> Result:
        """GET /v1/api-keys/{id}."""
        return self._get(f"/v1/api-keys/{_seg(key_id)}")

    def revoke(self, key_id: str, *, idempotency_key: Optional[str] = None) -> Result:
        """DELETE /v1/api-keys/{id}."""
        return self._write("DELETE", f"/v1/api-keys/{_seg(key_id)}", None, idempotency_key)


class Suppressions(_Listable):
    def list(self, **query: Any) -> Page:
        """GET /v1/suppressions (ordered by recipient)."""
        return self._list("/v1/suppressions", **query)

    def add(self, recipient: Optional[str] = None, reason: Optional[str] = None, *, idempotency_key: Optional[str] = None, **fields: Any) -> Result:
        """POST /v1/suppressions."""
        body = _fields({k: v for k, v in (("recipient", recipient), ("reason", reason)) if v is not None}, fields)
        return self._write("POST", "/v1/suppressions", body, idempotency_key)

    def delete(self, recipient: str, *, stream: Optional[str] = None, idempotency_key: Optional[str] = None) -> Result:
        """DELETE /v1/suppressions/{recipient}: every entry of the recipient, or
        with ``stream`` (transactional or broadcast) only that stream's."""
        path = f"/v1/suppressions/{_seg(recipient)}"
        if stream:
            path += "?stream=" + _seg(stream)
        return self._write("DELETE", path, None, idempotency_key)

    def import_(self, suppressions: Any, *, idempotency_key: Optional[str] = None) -> Result:
        """POST /v1/suppressions/import with a list of suppressions (dicts with
        ``recipient``, ``reason``, ``stream``), up to 10,000: all or nothing. Returns
        ``added`` and ``already_present``. One generated ``Idempotency-Key`` unless given."""
        key = idempotency_key or str(uuid.uuid4())
        body = suppressions if isinstance(suppressions, Mapping) else {"suppressions": list(suppressions)}
        return self._write("POST", "/v1/suppressions/import", body, key)

    def export(self, stream: Optional[str] = None) -> str:
        """GET /v1/suppressions/export: the whole list as CSV text (``recipient,reason,stream``),
        the format the import takes; ``stream`` keeps the entries that name that stream."""
        return self._client.request("GET", "/v1/suppressions/export", query={"stream": stream}, text=True)


class Domains(_Listable):
    def list(self, **query: Any) -> Page:
        """GET /v1/domains."""
        return self._list("/v1/domains", **query)

    def create(self, name: Optional[str] = None, *, idempotency_key: Optional[str] = None, **fields: Any) -> Result:
        """POST /v1/domains: ``name``, ``dkim_algorithm``."""
        body = _fields({"name": name} if name is not None else {}, fields)
        return self._write("POST", "/v1/domains", body, idempotency_key)

    def get(self, domain_id: str) -> Result:
        """GET /v1/domains/{id}."""
        return self._get(f"/v1/domains/{_seg(domain_id)}")

    def delete(self, domain_id: str, *, idempotency_key: Optional[str] = None) -> Result:
        """DELETE /v1/domains/{id}."""
        return self._write("DELETE", f"/v1/domains/{_seg(domain_id)}", None, idempotency_key)

    def verify(self, domain_id: str, *, idempotency_key: Optional[str] = None) -> Result:
        """POST /v1/domains/{id}/verify (looks up the DNS records)."""
        return self._write("POST", f"/v1/domains/{_seg(domain_id)}/verify", None, idempotency_key)

    def rotate_dkim(self, domain_id: str, *, idempotency_key: Optional[str] = None, **fields: Any) -> Result:
        """POST /v1/domains/{id}/dkim/rotate: optional ``dkim_algorithm``."""
        return self._write("POST", f"/v1/domains/{_seg(domain_id)}/dkim/rotate", _fields(None, fields), idempotency_key)


class Templates(_Listable):
    def list(self, **query: Any) -> Page:
        """GET /v1/templates."""
        return self._list("/v1/templates", **query)

    def create(self, template: Optional[Mapping[str, Any]] = None, *, idempotency_key: Optional[str] = None, **fields: Any) -> Result:
        """POST /v1/templates: ``name``, ``subject``, ``html``, ``text``, ``strict``."""
        return self._write("POST", "/v1/templates", _fields(template, fields), idempotency_key)

    def get(self, template_id: str, *, version: Optional[int] = None) -> Result:
        """GET /v1/templates/{id}, optionally one ``version``."""
        return self._get(f"/v1/templates/{_seg(template_id)}", {"version": version})

    def update(self, template_id: str, changes: Optional[Mapping[str, Any]] = None, *, idempotency_key: Optional[str] = None, **fields: Any) -> Result:
        """PUT /v1/templates/{id}: a new version."""
        return self._write("PUT", f"/v1/templates/{_seg(template_id)}", _fields(changes, fields), idempotency_key)

    def list_versions(self, template_id: str, **query: Any) -> Page:
        """GET /v1/templates/{id}/versions (page with ``client.paginate``)."""
        return self._list(f"/v1/templates/{_seg(template_id)}/versions", **query)

    def render(self, template_id: str, data: Optional[Mapping[str, Any]] = None, *, version: Optional[int] = None, idempotency_key: Optional[str] = None) -> Result:
        """POST /v1/templates/{id}/render with ``data``."""
        body: Dict[str, Any] = {"data": dict(data or {})}
        if version is not None:
            body["version"] = version
        return self._write("POST", f"/v1/templates/{_seg(template_id)}/render", body, idempotency_key)


class Webhooks(_Listable):
    def list(self, **query: Any) -> Page:
        """GET /v1/webhooks."""
        return self._list("/v1/webhooks", **query)

    def create(self, webhook: Optional[Mapping[str, Any]] = None, *, idempotency_key: Optional[str] = None, **fields: Any) -> Result:
        """POST /v1/webhooks: ``url``, ``events``, ``description``. The answer has ``secret``."""
        return self._write("POST", "/v1/webhooks", _fields(webhook, fields), idempotency_key)

    def get(self, webhook_id: str) -> Result:
        """GET /v1/webhooks/{id}."""
        return self._get(f"/v1/webhooks/{_seg(webhook_id)}")

    def update(self, webhook_id: str, changes: Optional[Mapping[str, Any]] = None, *, idempotency_key: Optional[str] = None, **fields: Any) -> Result:
        """PATCH /v1/webhooks/{id}: any of ``url``, ``events``, ``description``,
        ``enabled``; the others and the secret are kept."""
        return self._write("PATCH", f"/v1/webhooks/{_seg(webhook_id)}", _fields(changes, fields), idempotency_key)

    def test(self, webhook_id: str, *, idempotency_key: Optional[str] = None) -> Result:
        """POST /v1/webhooks/{id}/test: sends a signed ``webhook.test`` event now; the
        answer has the receiver's ``status_code``, ``latency_ms`` and ``response``
        (its first 1 KB), or ``error`` when it could not be reached."""
        return self._write("POST", f"/v1/webhooks/{_seg(webhook_id)}/test", {}, idempotency_key)

    def delete(self, webhook_id: str, *, idempotency_key: Optional[str] = None) -> Result:
        """DELETE /v1/webhooks/{id}."""
        return self._write("DELETE", f"/v1/webhooks/{_seg(webhook_id)}", None, idempotency_key)

    def rotate_secret(self, webhook_id: str, *, idempotency_key: Optional[str] = None) -> Result:
        """POST /v1/webhooks/{id}/rotate-secret. The answer has the new ``secret``."""
        return self._write("POST", f"/v1/webhooks/{_seg(webhook_id)}/rotate-secret", {}, idempotency_key)

    def list_deliveries(self, webhook_id: str, **query: Any) -> Page:
        """GET /v1/webhooks/{id}/deliveries: ``status`` and the paging parameters."""
        return self._list(f"/v1/webhooks/{_seg(webhook_id)}/deliveries", **query)

    def replay_event(self, webhook_id: str, event_id: str, *, idempotency_key: Optional[str] = None) -> Result:
        """POST /v1/webhooks/{id}/events/{event_id}/replay (a failed delivery): 202."""
        return self._write("POST", f"/v1/webhooks/{_seg(webhook_id)}/events/{_seg(event_id)}/replay", {}, idempotency_key)


class Team(_Listable):
    def list(self, **query: Any) -> Page:
        """GET /v1/team."""
        return self._list("/v1/team", **query)

    def invite(self, email: Optional[str] = None, role: Optional[str] = None, *, idempotency_key: Optional[str] = None, **fields: Any) -> Result:
        """POST /v1/team/invite: ``email``, ``role``."""
        body = _fields({k: v for k, v in (("email", email), ("role", role)) if v is not None}, fields)
        return self._write("POST", "/v1/team/invite", body, idempotency_key)


class Analytics(_Resource):
    def summary(self, **query: Any) -> Result:
        """GET /v1/analytics/summary: ``from_`` (or ``from``), ``to``, ``campaign_id``, ``domain``."""
        return self._get("/v1/analytics/summary", _fields(None, query))


class Ips(_Resource):
    def list(self) -> Result:
        """GET /v1/ips (every item at once)."""
        return self._get("/v1/ips", page=True)

    def list_pools(self) -> Result:
        """GET /v1/ips/pools (every item at once)."""
        return self._get("/v1/ips/pools", page=True)


class Grader(_Resource):
    def check(self, domain: str, selectors: Optional[Any] = None) -> Result:
        """POST /v1/grader/check: the public domain-only check (no key sent)."""
        body: Dict[str, Any] = {"domain": domain}
        if selectors is not None:
            body["selectors"] = list(selectors)
        return self._write("POST", "/v1/grader/check", body, auth=False)

    def submit(self, submission: Optional[Mapping[str, Any]] = None, *, idempotency_key: Optional[str] = None, **fields: Any) -> Result:
        """POST /v1/grader/submit: a full message, analysed and stored."""
        return self._write("POST", "/v1/grader/submit", _fields(submission, fields), idempotency_key)

    def result(self, result_id: str) -> Result:
        """GET /v1/grader/results/{id}."""
        return self._get(f"/v1/grader/results/{_seg(result_id)}")

    def history(self, *, page: Optional[int] = None, per_page: Optional[int] = None, **query: Any) -> Page:
        """GET /v1/grader/history (``page``, ``per_page``); walk it with
        ``client.paginate(client.grader.history, mode="page")``."""
        query.pop("cursor", None)
        return self._list("/v1/grader/history", page=page, per_page=per_page, **query)


class Inbound(_Resource):
    """Inbound email: domains the account receives mail for, routes from their addresses to
    webhooks, and the raw messages received (docs/inbound.md)."""

    def list_domains(self, **query: Any) -> Page:
        """GET /v1/inbound/domains."""
        return self._list("/v1/inbound/domains", **query)

    def create_domain(self, name: str, *, idempotency_key: Optional[str] = None) -> Result:
        """POST /v1/inbound/domains: the answer names the MX and TXT records to publish."""
        return self._write("POST", "/v1/inbound/domains", {"name": name}, idempotency_key)

    def get_domain(self, domain_id: str) -> Result:
        """GET /v1/inbound/domains/{id}."""
        return self._get(f"/v1/inbound/domains/{_seg(domain_id)}")

    def delete_domain(self, domain_id: str, *, idempotency_key: Optional[str] = None) -> Result:
        """DELETE /v1/inbound/domains/{id} (its routes go with it)."""
        return self._write("DELETE", f"/v1/inbound/domains/{_seg(domain_id)}", None, idempotency_key)

    def verify_domain(self, domain_id: str, *, idempotency_key: Optional[str] = None) -> Result:
        """POST /v1/inbound/domains/{id}/verify (looks up the MX and the ownership TXT record)."""
        return self._write("POST", f"/v1/inbound/domains/{_seg(domain_id)}/verify", None, idempotency_key)

    def list_routes(self, **query: Any) -> Page:
        """GET /v1/inbound/routes."""
        return self._list("/v1/inbound/routes", **query)

    def create_route(self, domain_id: str, pattern: str, webhook_id: str, *, idempotency_key: Optional[str] = None) -> Result:
        """POST /v1/inbound/routes: ``pattern`` is a local part such as ``support``, or ``*``."""
        body = {"domain_id": domain_id, "pattern": pattern, "webhook_id": webhook_id}
        return self._write("POST", "/v1/inbound/routes", body, idempotency_key)

    def get_route(self, route_id: str) -> Result:
        """GET /v1/inbound/routes/{id}."""
        return self._get(f"/v1/inbound/routes/{_seg(route_id)}")

    def delete_route(self, route_id: str, *, idempotency_key: Optional[str] = None) -> Result:
        """DELETE /v1/inbound/routes/{id}."""
        return self._write("DELETE", f"/v1/inbound/routes/{_seg(route_id)}", None, idempotency_key)

    def raw(self, message_id: str) -> bytes:
        """GET /v1/inbound/messages/{id}/raw: the message exactly as received (``message/rfc822``)."""
        return self._get(f"/v1/inbound/messages/{_seg(message_id)}/raw").content
