"""What a call returns: the decoded JSON plus the answer's status and headers."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, NamedTuple, Optional


def header(headers: Any, name: str) -> Optional[str]:
    """Reads a header case-insensitively from a dict, an http.client message or similar."""
    if headers is None:
        return None
    get = getattr(headers, "get", None)
    if get is not None:
        value = get(name)
        if value is not None:
            return value
    lname = name.lower()
    try:
        items = headers.items()
    except AttributeError:
        return None
    for key, value in items:
        if key.lower() == lname:
            return value
    return None


def _int(value: Optional[str]) -> Optional[int]:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


class RateLimit(NamedTuple):
    """The ``X-RateLimit-*`` headers of one answer (None where absent)."""

    limit: Optional[int]
    remaining: Optional[int]
    reset: Optional[int]

    @classmethod
    def from_headers(cls, headers: Any) -> "RateLimit":
        return cls(
            _int(header(headers, "X-RateLimit-Limit")),
            _int(header(headers, "X-RateLimit-Remaining")),
            _int(header(headers, "X-RateLimit-Reset")),
        )


class Result(dict):
    """A successful answer: the JSON object itself (a dict), plus

    - ``status_code``: the HTTP status
    - ``headers``: every header (a dict; use :meth:`header` for case-insensitive reads)
    - ``rate_limit``: :class:`RateLimit`
    - ``request_id``: ``X-Request-Id``
    - ``idempotent_replayed``: True when ``Idempotent-Replayed: true``
    - ``attempts``: how many requests the call took (more than 1 after retries)
    - ``content``: the answer's body as bytes (what a non-JSON answer, such as a
      message's raw source, is read from)
    """

    status_code: int
    headers: Dict[str, str]
    attempts: int
    content: bytes = b""

    def __init__(self, body: Any, status: int, headers: Mapping[str, str], attempts: int = 1) -> None:
        super().__init__(body if isinstance(body, dict) else {})
        self.status_code = status
        self.headers = dict(headers)
        self.attempts = attempts

    def header(self, name: str) -> Optional[str]:
        return header(self.headers, name)

    @property
    def rate_limit(self) -> RateLimit:
        return RateLimit.from_headers(self.headers)

    @property
    def request_id(self) -> Optional[str]:
        return self.header("X-Request-Id")

    @property
    def idempotent_replayed(self) -> bool:
        return (self.header("Idempotent-Replayed") or "").lower() == "true"


_LINK = re.compile(r'<([^>]*)>\s*((?:;\s*[^;,]+)*)')


def parse_link(value: Optional[str]) -> Dict[str, str]:
    """Parses an RFC 8288 Link header into {rel: url}."""
    out: Dict[str, str] = {}
    if not value:
        return out
    for match in _LINK.finditer(value):
        url, params = match.group(1), match.group(2)
        for param in params.split(";"):
            key, _, val = param.strip().partition("=")
            if key.strip().lower() == "rel":
                for rel in val.strip().strip('"').split():
                    out[rel.lower()] = url
    return out


class Page(Result):
    """One page of a list. ``data`` is its items. In cursor mode ``has_more`` and
    ``cursor`` (None on the last page); in page mode ``page``, ``total`` and ``links``
    (the ``Link`` header by rel)."""

    @property
    def data(self) -> List[Any]:
        return list(self.get("data") or [])

    @property
    def has_more(self) -> bool:
        if "has_more" in self:
            return bool(self["has_more"])
        return "next" in self.links

    @property
    def cursor(self) -> Optional[str]:
        return self.get("cursor") or None

    @property
    def links(self) -> Dict[str, str]:
        return parse_link(self.header("Link"))
