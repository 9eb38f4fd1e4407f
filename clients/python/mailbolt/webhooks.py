"""Webhook signature verification (spec §6, docs/webhooks.md#signatures).

    from mailbolt import webhooks
    webhooks.verify(raw_body, request.headers, current_secret, previous_secret)

raises :class:`StaleTimestampError` (answer 400) or :class:`InvalidSignatureError`
(answer 401) and returns True when the request is genuine.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from typing import Any, Callable, List, Optional, Tuple, Union

from ._response import header
from .errors import MailboltError

SIGNATURE_HEADER = "X-Service-Signature"
TIMESTAMP_HEADER = "X-Service-Timestamp"
#: Seconds the signature's ``t`` may differ from the clock, either way.
DEFAULT_TOLERANCE = 300


class WebhookVerificationError(MailboltError):
    """The webhook request must be rejected."""


class InvalidSignatureError(WebhookVerificationError):
    """No or malformed signature, or no ``v1`` matches any secret: answer 401."""


class StaleTimestampError(WebhookVerificationError):
    """``t`` is more than the tolerance away from the clock: answer 400."""


def sign(body: bytes, secret: str, timestamp: int) -> str:
    """The hex HMAC-SHA256 of ``<timestamp>.<body>`` keyed by the Base64-decoded secret."""
    key = _decode_secret(secret)
    return hmac.new(key, str(int(timestamp)).encode("ascii") + b"." + bytes(body), hashlib.sha256).hexdigest()


def _decode_secret(secret: Union[str, bytes]) -> bytes:
    try:
        return base64.b64decode(secret, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError("webhook secret is not standard Base64") from exc


def parse_signature(value: Optional[str]) -> Tuple[int, List[str]]:
    """Splits ``t=<t>,v1=<hex>[,v1=<hex>...]``; other keys are ignored."""
    if not value:
        raise InvalidSignatureError(f"missing {SIGNATURE_HEADER}")
    t: Optional[str] = None
    v1: List[str] = []
    for part in value.split(","):
        key, sep, val = part.strip().partition("=")
        if not sep:
            continue
        if key == "t":
            t = val
        elif key == "v1" and val:
            v1.append(val)
    if t is None or not t.isascii() or not t.isdigit():
        raise InvalidSignatureError("signature has no valid t")
    if not v1:
        raise InvalidSignatureError("signature has no v1")
    return int(t), v1


def verify(
    body: bytes,
    headers: Any,
    *secrets: str,
    tolerance: float = DEFAULT_TOLERANCE,
    now: Union[None, float, Callable[[], float]] = None,
) -> bool:
    """Verifies a webhook request.

    ``body`` is the raw request body (bytes, before any JSON parsing). ``headers`` is the
    request's headers (any mapping, read case-insensitively) or the ``X-Service-Signature``
    value itself. ``secrets`` are the webhook's Base64 secrets: during a rotation give both.
    ``now`` stands in for the clock (unix seconds, or a function returning them).

    Returns True, or raises :class:`StaleTimestampError` / :class:`InvalidSignatureError`.
    """
    if not secrets:
        raise ValueError("verify needs at least one secret")
    if isinstance(body, str):
        raise TypeError("body must be the raw bytes of the request, not str")
    if isinstance(headers, str):
        signature, stamp = headers, None
    else:
        signature, stamp = header(headers, SIGNATURE_HEADER), header(headers, TIMESTAMP_HEADER)
    t, candidates = parse_signature(signature)
    if stamp is not None and stamp.strip() != str(t):
        raise InvalidSignatureError(f"{TIMESTAMP_HEADER} differs from the signature's t")
    clock = now() if callable(now) else (time.time() if now is None else now)
    if abs(float(clock) - t) > tolerance:
        raise StaleTimestampError(f"timestamp {t} is more than {tolerance:g}s from the clock")
    expected = [sign(body, secret, t).encode("ascii") for secret in secrets]
    ok = False
    for given in candidates:
        given_b = given.strip().lower().encode("ascii", "replace")
        for digest in expected:
            # no early exit: every pair is compared, each in constant time
            ok |= hmac.compare_digest(given_b, digest)
    if not ok:
        raise InvalidSignatureError("no v1 signature matches")
    return True


def is_valid(body: bytes, headers: Any, *secrets: str, **kwargs: Any) -> bool:
    """Like :func:`verify`, but answers False instead of raising."""
    try:
        return verify(body, headers, *secrets, **kwargs)
    except WebhookVerificationError:
        return False
