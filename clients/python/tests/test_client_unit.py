"""The client against a scripted local server: retries, idempotency keys, errors,
configuration. No Mailbolt server needed."""

import json
import os
import ssl
import unittest
from unittest import mock

import mailbolt
from mailbolt._response import parse_link

from .helpers import CLIENT_DIR, REPO, StubServer

RL = {"X-Ratelimit-Limit": "10", "X-Ratelimit-Remaining": "7", "X-Ratelimit-Reset": "1795320001", "X-Request-Id": "req-1"}


def err(status, code, **headers):
    return (status, dict(RL, **headers), {"error": {"code": code, "message": code.lower(), "details": {"field": "x"}}})


ACCEPTED = (202, RL, {"id": "m1", "status": "queued"})


class ClientUnitTest(unittest.TestCase):
    def client(self, url, **kwargs):
        self.sleeps = []
        kwargs.setdefault("sleep", self.sleeps.append)
        return mailbolt.Client("svc_test_x", url, **kwargs)

    def test_transient_errors_are_retried_with_one_idempotency_key(self):
        script = [err(429, "RATE_LIMIT_EXCEEDED", **{"Retry-After": "2"}), err(503, "SERVICE_UNAVAILABLE"), err(504, "GATEWAY_TIMEOUT"), ACCEPTED]
        with StubServer(script) as stub:
            sent = self.client(stub.url).messages.send(from_="a@example.com", to=["b@example.com"], subject="s", text="t")
        self.assertEqual(sent["id"], "m1")
        self.assertEqual(sent.attempts, 4)
        self.assertEqual(len(stub.requests), 4)
        keys = {r[2].get("Idempotency-Key") for r in stub.requests}
        self.assertEqual(len(keys), 1)
        self.assertTrue(next(iter(keys)))
        self.assertEqual(len({r[3] for r in stub.requests}), 1, "every retry sends the same bytes")
        self.assertEqual(json.loads(stub.requests[0][3])["from"], "a@example.com")
        # Retry-After is a floor; then exponential backoff with jitter (base 0.5 s)
        self.assertEqual(len(self.sleeps), 3)
        self.assertGreaterEqual(self.sleeps[0], 2)
        self.assertTrue(0.25 <= self.sleeps[1] <= 1.0, self.sleeps)
        self.assertTrue(0.5 <= self.sleeps[2] <= 2.0, self.sleeps)

    def test_caller_idempotency_key_is_used(self):
        with StubServer([err(503, "SERVICE_UNAVAILABLE"), (202, RL, {"data": [{"id": "m1"}]})]) as stub:
            self.client(stub.url).messages.send_batch([{"from": "a@example.com"}], idempotency_key="mine-1")
        self.assertEqual([r[2]["Idempotency-Key"] for r in stub.requests], ["mine-1", "mine-1"])
        self.assertEqual(json.loads(stub.requests[0][3]), {"messages": [{"from": "a@example.com"}]})

    def test_retries_stop_at_max_retries(self):
        with StubServer([err(503, "SERVICE_UNAVAILABLE")] * 5) as stub:
            with self.assertRaises(mailbolt.ServiceUnavailableError) as cm:
                self.client(stub.url, max_retries=2).account.get()
        self.assertEqual(len(stub.requests), 3)
        self.assertEqual(cm.exception.code, "SERVICE_UNAVAILABLE")
        with StubServer([err(429, "RATE_LIMIT_EXCEEDED", **{"Retry-After": "1"})]) as stub:
            with self.assertRaises(mailbolt.RateLimitError) as cm:
                self.client(stub.url, max_retries=0).account.get()
        self.assertEqual(len(stub.requests), 1)
        self.assertEqual(cm.exception.retry_after, 1.0)
        self.assertEqual(self.sleeps, [])

    def test_nothing_else_is_retried(self):
        cases = [
            (err(500, "INTERNAL_ERROR"), mailbolt.ServerError),
            (err(429, "QUOTA_EXCEEDED"), mailbolt.RateLimitError),
            (err(400, "VALIDATION_ERROR"), mailbolt.BadRequestError),
            (err(401, "INVALID_API_KEY"), mailbolt.AuthenticationError),
            (err(403, "INSUFFICIENT_SCOPES"), mailbolt.PermissionDeniedError),
            (err(404, "NOT_FOUND"), mailbolt.NotFoundError),
            (err(409, "CONFLICT"), mailbolt.ConflictError),
            (err(409, "IDEMPOTENCY_CONFLICT"), mailbolt.IdempotencyConflictError),
            (err(410, "GONE"), mailbolt.GoneError),
            (err(413, "BODY_TOO_LARGE"), mailbolt.PayloadTooLargeError),
            (err(422, "DOMAIN_NOT_VERIFIED"), mailbolt.UnprocessableEntityError),
        ]
        for answer, cls in cases:
            with StubServer([answer, ACCEPTED]) as stub:
                with self.assertRaises(cls) as cm:
                    self.client(stub.url).messages.send(from_="a@example.com", to=["b@example.com"])
            e = cm.exception
            self.assertIs(type(e), cls)
            self.assertEqual(len(stub.requests), 1, answer)
            self.assertEqual((e.status, e.code, e.message, e.details, e.request_id), (answer[0], answer[2]["error"]["code"], answer[2]["error"]["code"].lower(), {"field": "x"}, "req-1"))
            self.assertEqual(e.rate_limit, mailbolt.RateLimit(10, 7, 1795320001))
        self.assertEqual(self.sleeps, [])

    def test_error_without_envelope(self):
        with StubServer([(502, {}, None), (503, {}, None), ACCEPTED]) as stub:
            with self.assertRaises(mailbolt.ServerError) as cm:
                self.client(stub.url).account.get()
            self.assertEqual(cm.exception.code, "HTTP_502")
            # a bare 503 is SERVICE_UNAVAILABLE, so it is retried
            self.assertEqual(self.client(stub.url).account.get().status_code, 202)

    def test_connection_error(self):
        with StubServer([]) as stub:
            url = stub.url
        with self.assertRaises(mailbolt.MailboltConnectionError):
            self.client(url, timeout=5).account.get()

    def test_request_shape(self):
        answers = [(200, dict(RL, **{"Idempotent-Replayed": "true"}), {"ok": True}), (204, RL, None), (200, RL, {"data": []})]
        with StubServer(answers) as stub:
            c = self.client(stub.url + "/v1/")
            r = c.account.get()
            d = c.suppressions.delete("a+b@example.com")
            c.events.list(type=["message.sent", "message.bounced"], limit=5, cursor=None, page=None)
        self.assertEqual(dict(r), {"ok": True})
        self.assertTrue(r.idempotent_replayed)
        self.assertEqual(r.rate_limit, mailbolt.RateLimit(10, 7, 1795320001))
        self.assertEqual(r.request_id, "req-1")
        self.assertEqual((d.status_code, dict(d), d.idempotent_replayed), (204, {}, False))
        (m1, p1, h1, b1), (m2, p2, h2, _), (_, p3, _, _) = stub.requests
        self.assertEqual((m1, p1, b1), ("GET", "/v1/account", b""))
        self.assertEqual(h1["User-Agent"], "mailbolt-python/0.1.0")
        self.assertEqual(h1["X-Api-Key"], "svc_test_x")
        self.assertNotIn("Idempotency-Key", h1)
        self.assertEqual((m2, p2), ("DELETE", "/v1/suppressions/a%2Bb%40example.com"))
        self.assertEqual(p3, "/v1/events?type=message.sent&type=message.bounced&limit=5")

    def test_grader_check_sends_no_key(self):
        with StubServer([(200, RL, {"score": 1})]) as stub:
            self.client(stub.url).grader.check("example.com")
        self.assertNotIn("X-Api-Key", stub.requests[0][2])

    def test_page_mode_follows_link_next(self):
        def page(n, last):
            link = '</v1/team?limit=1&page=%d>; rel="first", </v1/team?limit=1&page=%d>; rel="last"' % (1, last)
            if n < last:
                link = '</v1/team?limit=1&page=%d>; rel="next", ' % (n + 1) + link
            return (200, dict(RL, Link=link), {"data": [{"n": n}], "page": n, "limit": 1, "total": last})

        with StubServer([page(1, 3), page(2, 3), page(3, 3)]) as stub:
            items = list(self.client(stub.url).team.items(mode="page", limit=1))
        self.assertEqual([i["n"] for i in items], [1, 2, 3])
        self.assertEqual([r[1] for r in stub.requests], ["/v1/team?page=1&limit=1", "/v1/team?page=2&limit=1", "/v1/team?page=3&limit=1"])
        with self.assertRaises(ValueError):
            list(self.client(stub.url).team.pages(mode="offset"))

    def test_parse_link(self):
        links = parse_link('</v1/x?page=3>; rel="next", </v1/x?page=1>; rel="prev first", <a,b>;rel=last')
        self.assertEqual(links, {"next": "/v1/x?page=3", "prev": "/v1/x?page=1", "first": "/v1/x?page=1", "last": "a,b"})
        self.assertEqual(parse_link(None), {})

    def test_configuration_from_environment(self):
        env = {"MAILBOLT_API_KEY": "svc_live_env", "MAILBOLT_BASE_URL": "https://mail.example.com/v1", "MAILBOLT_CA_FILE": ""}
        with mock.patch.dict(os.environ, env):
            c = mailbolt.Client()
        self.assertEqual((c.api_key, c.base_url, c.max_retries), ("svc_live_env", "https://mail.example.com", 3))
        self.assertEqual(c.ssl_context.minimum_version, ssl.TLSVersion.TLSv1_2)
        self.assertTrue(c.ssl_context.check_hostname)
        # an explicit argument wins; a CA file that does not exist is an error at construction
        self.assertEqual(mailbolt.Client("k", "http://h:1").api_key, "k")
        with mock.patch.dict(os.environ, {"MAILBOLT_CA_FILE": "/nonexistent/ca.pem"}):
            with self.assertRaises(OSError):
                mailbolt.Client("k", "http://h:1")
        with self.assertRaises(ValueError):
            mailbolt.Client("k", "http://h:1", max_retries=-1)

    def test_deprecation_warning(self):
        headers = dict(RL, Deprecation="true", Sunset="Sat, 01 May 2027 00:00:00 GMT")
        with StubServer([(200, headers, {}), (200, headers, {})]) as stub:
            c = self.client(stub.url)
            with self.assertWarns(DeprecationWarning):
                c.account.get()
            c.account.get()  # warned once per client


class OperationsMapTest(unittest.TestCase):
    def test_every_client_operation_is_mapped_to_a_method(self):
        with open(os.path.join(REPO, "web", "openapi.json"), encoding="utf-8") as f:
            doc = json.load(f)
        ops = {
            op["operationId"]
            for item in doc["paths"].values()
            for method, op in item.items()
            if method in ("get", "post", "put", "patch", "delete") and op.get("x-client") is not False
        }
        with open(os.path.join(CLIENT_DIR, "operations.json"), encoding="utf-8") as f:
            mapping = json.load(f)
        self.assertEqual(set(mapping), ops)
        client = mailbolt.Client("k", "http://127.0.0.1:1")
        for op, name in mapping.items():
            parts = name.split(".")
            self.assertEqual(parts[0], "client", name)
            target = client
            for part in parts[1:]:
                target = getattr(target, part)
            self.assertTrue(callable(target), (op, name))
        self.assertEqual(len(set(mapping.values())), len(mapping), "one method per operation")


if __name__ == "__main__":
    unittest.main()
