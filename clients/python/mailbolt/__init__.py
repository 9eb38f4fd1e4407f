"""Mailbolt: the first-party Python client (standard library only).

    import mailbolt
    client = mailbolt.Client()            # MAILBOLT_API_KEY, MAILBOLT_BASE_URL, MAILBOLT_CA_FILE
    sent = client.messages.send(from_="app@example.com", to=["ann@example.com"],
                                subject="Hi", text="Hello")
    print(sent["id"], sent.rate_limit.remaining)
"""

from . import webhooks
from ._response import Page, RateLimit, Result
from ._version import __version__
from .client import USER_AGENT, Client
from .errors import (
    TRANSIENT_CODES,
    APIError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    GatewayTimeoutError,
    GoneError,
    IdempotencyConflictError,
    MailboltConnectionError,
    MailboltError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    ServiceUnavailableError,
    UnprocessableEntityError,
)
from .webhooks import InvalidSignatureError, StaleTimestampError, WebhookVerificationError, verify

__all__ = [
    "Client", "Result", "Page", "RateLimit", "USER_AGENT", "__version__", "webhooks", "verify",
    "TRANSIENT_CODES", "MailboltError", "MailboltConnectionError", "APIError", "BadRequestError",
    "AuthenticationError", "PermissionDeniedError", "NotFoundError", "ConflictError",
    "IdempotencyConflictError", "GoneError", "PayloadTooLargeError", "UnprocessableEntityError",
    "RateLimitError", "ServerError", "ServiceUnavailableError", "GatewayTimeoutError",
    "WebhookVerificationError", "InvalidSignatureError", "StaleTimestampError",
]
