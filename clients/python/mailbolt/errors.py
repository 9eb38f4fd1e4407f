"""Typed errors of the Mailbolt client.

Every answer of the API that is not a 2xx becomes an :class:`APIError` subclass chosen by
its HTTP status (and, for 409, by its code). Each carries ``status``, ``code``, ``message``,
``details`` and ``request_id`` (the ``X-Request-Id`` header), plus the answer's headers and
rate-limit values.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

#: The codes that are retried (spec §7): nothing else is.
TRANSIENT_CODES = frozenset({"RATE_LIMIT_EXCEEDED", "SERVICE_UNAVAILABLE", "GATEWAY_TIMEOUT"})


class MailboltError(Exception):
    """Base class of every error this library raises."""


class MailboltConnectionError(MailboltError):
    """The request did not get an HTTP answer (refused, DNS, TLS, timeout). Not retried."""


class APIError(MailboltError):
    """An error answer of the API (the ``{"error": {...}}`` envelope)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Optional[Mapping[str, Any]] = None,
        request_id: Optional[str] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}" + (f" (request {request_id})" if request_id else ""))
        self.status = status
        self.code = code
        self.message = message
        self.details = dict(details or {})
        self.request_id = request_id
        self.headers = dict(headers or {})
        from ._response import RateLimit  # local import: avoids a cycle

        self.rate_limit = RateLimit.from_headers(self.headers)

    @property
    def retry_after(self) -> Optional[float]:
        """The ``Retry-After`` header in seconds, or None."""
        from ._response import header

        value = header(self.headers, "Retry-After")
        try:
            return float(value) if value is not None else None
        except ValueError:
            return None

    @property
    def transient(self) -> bool:
        return self.code in TRANSIENT_CODES


class BadRequestError(APIError):
    """400: VALIDATION_ERROR, INVALID_INPUT, INVALID_TEMPLATE, ..."""


class AuthenticationError(APIError):
    """401: UNAUTHORIZED, INVALID_API_KEY, TOKEN_EXPIRED."""


class PermissionDeniedError(APIError):
    """403: FORBIDDEN, INSUFFICIENT_SCOPES."""


class NotFoundError(APIError):
    """404: missing, or another tenant's."""


class ConflictError(APIError):
    """409: CONFLICT."""


class IdempotencyConflictError(ConflictError):
    """409 IDEMPOTENCY_CONFLICT: the Idempotency-Key was used with a different request."""


class GoneError(APIError):
    """410: cancelled message, sunset API version."""


class PayloadTooLargeError(APIError):
    """413: BODY_TOO_LARGE."""


class UnprocessableEntityError(APIError):
    """422: DOMAIN_NOT_VERIFIED, template render failure; retrying unchanged cannot succeed."""


class RateLimitError(APIError):
    """429: RATE_LIMIT_EXCEEDED (retried) or QUOTA_EXCEEDED (not retried)."""


class ServerError(APIError):
    """5xx."""


class ServiceUnavailableError(ServerError):
    """503 SERVICE_UNAVAILABLE (retried)."""


class GatewayTimeoutError(ServerError):
    """504 GATEWAY_TIMEOUT (retried)."""


_BY_STATUS = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    413: PayloadTooLargeError,
    422: UnprocessableEntityError,
    429: RateLimitError,
    503: ServiceUnavailableError,
    504: GatewayTimeoutError,
}

_DEFAULT_CODE = {
    429: "RATE_LIMIT_EXCEEDED",
    503: "SERVICE_UNAVAILABLE",
    504: "GATEWAY_TIMEOUT",
}


def error_for(status: int, body: Any, request_id: Optional[str], headers: Mapping[str, str]) -> APIError:
    """Builds the typed error for an answer. A body without the envelope (a proxy's page)
    gets the status's usual code, or ``HTTP_<status>``."""
    code = message = None
    details: Any = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        env = body["error"]
        code = env.get("code")
        message = env.get("message")
        details = env.get("details")
    if not isinstance(code, str) or not code:
        code = _DEFAULT_CODE.get(status, f"HTTP_{status}")
    if not isinstance(message, str):
        message = f"HTTP {status}"
    if not isinstance(details, dict):
        details = {}
    if status == 409 and code == "IDEMPOTENCY_CONFLICT":
        cls = IdempotencyConflictError
    elif status in _BY_STATUS:
        cls = _BY_STATUS[status]
    elif status >= 500:
        cls = ServerError
    else:
        cls = APIError
    return cls(status, code, message, details, request_id, headers)
