"""The client against a real Mailbolt server started by clients/harness.sh. Skipped when
MAILBOLT_BASE_URL is not set."""

import datetime
import json
import math
import os
import unittest
import uuid

import mailbolt

LIVE = bool(os.environ.get("MAILBOLT_BASE_URL"))
FROM = "app@example.com"  # a test key sends from any domain


def key(name):
    value = os.environ.get(name)
    if not value:
        raise unittest.SkipTest(f"{name} is not set")
    return value


@unittest.skipUnless(LIVE, "MAILBOLT_BASE_URL is not set (run through clients/harness.sh)")
class LiveTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sleeps = []

        def sleep(seconds):
            import time

            cls.sleeps.append(seconds)
            time.sleep(seconds)

        cls.test = mailbolt.Client(key("MAILBOLT_TEST_API_KEY"), sleep=sleep)
        cls.live = mailbolt.Client(sleep=sleep)  # MAILBOLT_API_KEY and MAILBOLT_BASE_URL

    def setUp(self):
        del self.sleeps[:]

    def message(self, **extra):
        msg = {"from": FROM, "to": ["ann@example.com"], "subject": "Hello", "text": "Hi Ann"}
        msg.update(extra)
        return msg

    # -- sending -----------------------------------------------------------------------

    def test_send_and_get(self):
        sent = self.test.messages.send(from_=FROM, to=["ann@example.com"], subject="Hello", html="<p>Hi</p>")
        self.assertEqual(sent.status_code, 202)
        self.assertIn(sent["status"], ("queued", "sending", "delivered"))
        self.assertTrue(sent.request_id)
        self.assertIsInstance(sent.rate_limit.limit, int)
        self.assertIsInstance(sent.rate_limit.remaining, int)
        self.assertIsInstance(sent.rate_limit.reset, int)
        self.assertFalse(sent.idempotent_replayed)
        got = self.test.messages.get(sent["id"])
        self.assertEqual((got.status_code, got["id"], got["subject"], got["mode"]), (200, sent["id"], "Hello", "test"))
        self.assertIsNotNone(got.rate_limit.remaining)

    def test_batch(self):
        batch = self.test.messages.send_batch([self.message(to=["b%d@example.com" % i]) for i in range(3)])
        self.assertEqual(batch.status_code, 202)
        ids = [m["id"] for m in batch["data"]]
        self.assertEqual(len(set(ids)), 3)
        for i, mid in enumerate(ids):
            self.assertEqual(self.test.messages.get(mid)["to"], ["b%d@example.com" % i])

    def test_cancel_scheduled(self):
        later = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
        sent = self.test.messages.send(self.message(send_at=later))
        self.assertEqual(sent["status"], "scheduled")
        cancelled = self.test.messages.cancel(sent["id"])
        self.assertEqual((cancelled.status_code, cancelled["status"]), (200, "cancelled"))
        # a cancelled message is gone (410), to get and to cancel again
        for call in (self.test.messages.get, self.test.messages.cancel):
            with self.assertRaises(mailbolt.GoneError) as cm:
                call(sent["id"])
            self.assertEqual(cm.exception.status, 410)

    def test_idempotent_replay(self):
        idem = str(uuid.uuid4())
        first = self.test.messages.send(self.message(subject="once"), idempotency_key=idem)
        again = self.test.messages.send(self.message(subject="once"), idempotency_key=idem)
        self.assertEqual(again["id"], first["id"])
        self.assertFalse(first.idempotent_replayed)
        self.assertTrue(again.idempotent_replayed)
        self.assertEqual(again.header("idempotent-replayed"), "true")
        # without a key each call is its own send
        self.assertNotEqual(self.test.messages.send(self.message())["id"], self.test.messages.send(self.message())["id"])

    # -- pagination --------------------------------------------------------------------

    def test_suppressions_walked_in_both_modes(self):
        prefix = "walk-%s" % uuid.uuid4().hex[:8]
        created = ["%s-%d@example.com" % (prefix, i) for i in range(7)]
        for r in created:
            self.assertIn(self.live.suppressions.add(r, "manual").status_code, (200, 201))
        cursor_pages = list(self.live.suppressions.pages(limit=2))
        page_pages = list(self.live.suppressions.pages(mode="page", limit=2))
        by_cursor = [s["recipient"] for p in cursor_pages for s in p.data]
        by_page = [s["recipient"] for p in page_pages for s in p.data]
        self.assertEqual(by_cursor, by_page)
        self.assertEqual(len(set(by_cursor)), len(by_cursor), "no repeats")
        self.assertTrue(set(created) <= set(by_cursor))
        total = page_pages[0]["total"]
        self.assertEqual(len(by_page), total)
        self.assertEqual(len(page_pages), math.ceil(total / 2))
        self.assertGreaterEqual(len(cursor_pages), 4)
        self.assertTrue(all(p.has_more and p.cursor for p in cursor_pages[:-1]))
        self.assertFalse(cursor_pages[-1].has_more)
        self.assertIsNone(cursor_pages[-1].cursor)
        self.assertNotIn("next", page_pages[-1].links)
        self.assertEqual(page_pages[0].links["last"], "/v1/suppressions?limit=2&page=%d" % len(page_pages))
        # a single page, and items() over all pages
        one = self.live.suppressions.list(limit=3)
        self.assertEqual((len(one.data), one["limit"], one.has_more), (3, 3, True))
        self.assertEqual([s["recipient"] for s in self.live.suppressions.items(limit=5)], by_cursor)
        # clean up (also covers delete)
        for r in created:
            self.assertEqual(self.live.suppressions.delete(r).status_code, 204)
        left = [s["recipient"] for s in self.live.suppressions.items(mode="page", limit=200)]
        self.assertFalse(set(created) & set(left))

    def test_suppressions_import_and_export(self):
        prefix = "imp-%s" % uuid.uuid4().hex[:8]
        rows = [{"recipient": "%s-a@example.com" % prefix}, {"recipient": "%s-b@example.com" % prefix, "reason": "unsubscribe", "stream": "broadcast"},
                {"recipient": "%s-a@example.com" % prefix}]
        res = self.live.suppressions.import_(rows)
        self.assertEqual((res.status_code, res["added"], res["already_present"]), (200, 2, 1))
        with self.assertRaises(mailbolt.errors.APIError) as bad:
            self.live.suppressions.import_([{"recipient": "%s-c@example.com" % prefix}, {"recipient": "not an address"}])
        self.assertEqual((bad.exception.status, bad.exception.code, bad.exception.details["index"]), (400, "VALIDATION_ERROR", 1))
        csv = self.live.suppressions.export()
        self.assertTrue(csv.startswith("recipient,reason,stream\n"))
        self.assertIn("%s-a@example.com,manual,\n%s-b@example.com,unsubscribe,broadcast\n" % (prefix, prefix), csv)
        self.assertNotIn("%s-c@example.com" % prefix, csv)
        self.assertEqual(self.live.suppressions.export(stream="broadcast").count(prefix), 1)
        other = mailbolt.Client(key("MAILBOLT_OTHER_API_KEY"))
        self.assertNotIn(prefix, other.suppressions.export())
        # b's entry is for broadcast only: deleting its transactional entry finds none
        with self.assertRaises(mailbolt.errors.NotFoundError):
            self.live.suppressions.delete("%s-b@example.com" % prefix, stream="transactional")
        self.assertEqual(self.live.suppressions.delete("%s-b@example.com" % prefix, stream="broadcast").status_code, 204)
        self.live.suppressions.delete("%s-a@example.com" % prefix)

    def test_messages_walked_in_both_modes(self):
        self.test.messages.send_batch([self.message(to=["w%d@example.com" % i]) for i in range(5)])
        by_cursor = [m["id"] for m in self.test.messages.items(limit=2)]
        by_page = [m["id"] for m in self.test.messages.items(mode="page", limit=2)]
        self.assertGreaterEqual(len(by_cursor), 5)
        self.assertEqual(by_cursor, by_page)
        self.assertEqual(len(set(by_cursor)), len(by_cursor))

    # -- errors ------------------------------------------------------------------------

    def test_401_bad_key(self):
        bad = mailbolt.Client("svc_live_" + "x" * 43)
        with self.assertRaises(mailbolt.AuthenticationError) as cm:
            bad.account.get()
        e = cm.exception
        self.assertEqual(e.status, 401)
        self.assertIn(e.code, ("UNAUTHORIZED", "INVALID_API_KEY"))
        self.assertTrue(e.message)
        self.assertTrue(e.request_id)
        self.assertIsNotNone(e.rate_limit.limit)

    def test_403_narrow_key(self):
        narrow = mailbolt.Client(key("MAILBOLT_NARROW_API_KEY"))
        self.assertTrue(narrow.account.get()["id"])  # its one scope works
        with self.assertRaises(mailbolt.PermissionDeniedError) as cm:
            narrow.suppressions.list()
        self.assertEqual((cm.exception.status, cm.exception.code), (403, "INSUFFICIENT_SCOPES"))
        self.assertTrue(cm.exception.request_id)

    def test_404_other_tenant(self):
        sent = self.live.suppressions.add("tenant-%s@example.com" % uuid.uuid4().hex[:8], "manual")
        other = mailbolt.Client(key("MAILBOLT_OTHER_API_KEY"))
        with self.assertRaises(mailbolt.NotFoundError) as cm:
            other.suppressions.delete(sent["recipient"])
        self.assertEqual((cm.exception.status, cm.exception.code), (404, "NOT_FOUND"))
        mine = self.test.messages.send(self.message())
        with self.assertRaises(mailbolt.NotFoundError) as cm:
            other.messages.get(mine["id"])
        self.assertEqual(cm.exception.code, "NOT_FOUND")
        self.live.suppressions.delete(sent["recipient"])

    def test_409_idempotency_key_reused_with_another_body(self):
        idem = str(uuid.uuid4())
        self.test.messages.send(self.message(subject="first"), idempotency_key=idem)
        with self.assertRaises(mailbolt.IdempotencyConflictError) as cm:
            self.test.messages.send(self.message(subject="second"), idempotency_key=idem)
        e = cm.exception
        self.assertIsInstance(e, mailbolt.ConflictError)
        self.assertEqual((e.status, e.code), (409, "IDEMPOTENCY_CONFLICT"))
        self.assertEqual(self.sleeps, [], "a 409 is not retried")

    def test_inbound(self):
        c = self.live
        name = "in-%s.example.com" % uuid.uuid4().hex[:6]
        d = c.inbound.create_domain(name)
        self.assertEqual((d.status_code, d["name"], d["status"]), (201, name, "pending"))
        self.assertEqual([r["type"] for r in d["records"]], ["MX", "TXT"])
        self.assertEqual(c.inbound.get_domain(d["id"])["name"], name)
        self.assertIn(d["id"], [x["id"] for x in c.inbound.list_domains(limit=200).data])
        w = c.webhooks.create(url="http://127.0.0.1:9/inbound", events=["message.delivered"])
        r = c.inbound.create_route(d["id"], "support", w["id"])
        self.assertEqual((r.status_code, r["pattern"], r["webhook_id"]), (201, "support", w["id"]))
        self.assertEqual(c.inbound.get_route(r["id"])["domain_id"], d["id"])
        self.assertIn(r["id"], [x["id"] for x in c.inbound.list_routes().data])
        with self.assertRaises(mailbolt.ConflictError):
            c.inbound.create_route(d["id"], "support", w["id"])
        other = mailbolt.Client(key("MAILBOLT_OTHER_API_KEY"))
        with self.assertRaises(mailbolt.NotFoundError):
            other.inbound.get_domain(d["id"])
        with self.assertRaises(mailbolt.NotFoundError):
            c.inbound.raw(str(uuid.uuid4()))
        self.assertEqual(c.inbound.delete_route(r["id"]).status_code, 204)
        self.assertEqual(c.inbound.delete_domain(d["id"]).status_code, 204)
        c.webhooks.delete(w["id"])

    def test_422_domain_not_verified(self):
        with self.assertRaises(mailbolt.UnprocessableEntityError) as cm:
            self.live.messages.send(self.message(**{"from": "app@unverified-%s.example" % uuid.uuid4().hex[:6]}))
        e = cm.exception
        self.assertEqual((e.status, e.code), (422, "DOMAIN_NOT_VERIFIED"))
        self.assertIn("domain", e.details)
        self.assertEqual(self.sleeps, [], "a 422 is not retried")

    def test_400_validation(self):
        with self.assertRaises(mailbolt.BadRequestError) as cm:
            self.test.suppressions.list(limit=0)
        self.assertEqual((cm.exception.code, cm.exception.details.get("field")), ("VALIDATION_ERROR", "limit"))

    def test_429_retried_then_succeeds(self):
        limited_key = key("MAILBOLT_LIMITED_API_KEY")
        sleeps = []

        def sleep(seconds):
            import time

            sleeps.append(seconds)
            time.sleep(seconds)

        client = mailbolt.Client(limited_key, sleep=sleep)
        once = mailbolt.Client(limited_key, max_retries=0)
        # 1 request per second: the second of two quick calls gets 429. If the two happen
        # to straddle a second boundary, try again (a few times at most).
        for _ in range(5):
            client.account.get()
            second = client.account.get()
            if second.attempts > 1:
                break
        self.assertGreater(second.attempts, 1)
        self.assertEqual(second.status_code, 200)
        self.assertEqual(second.rate_limit.limit, 1)
        self.assertTrue(sleeps and min(sleeps) >= 1.0, sleeps)  # Retry-After: 1 honoured
        # without retries the 429 surfaces, typed, with its Retry-After
        for _ in range(5):
            client.account.get()
            try:
                once.account.get()
            except mailbolt.RateLimitError as e:
                self.assertEqual((e.status, e.code), (429, "RATE_LIMIT_EXCEEDED"))
                self.assertGreaterEqual(e.retry_after, 1)
                self.assertEqual(e.rate_limit.remaining, 0)
                break
        else:
            self.fail("no 429 in five tries")

    # -- the other operations, once each ----------------------------------------------

    def test_tour_of_other_operations(self):
        c = self.test
        self.assertTrue(c.account.get()["id"])
        self.assertIn("data", c.events.list(limit=5))
        self.assertIn("totals", c.analytics.summary())
        self.assertIn("data", c.ips.list())
        self.assertIn("data", c.ips.list_pools())
        self.assertIn("total", c.grader.history(per_page=5))
        self.assertIsInstance(list(c.team.items()), list)

        k = self.live.api_keys.create(name="tour", scopes=["account:read"])
        self.assertTrue(k["key"].startswith("svc_live_"))
        self.assertEqual(self.live.api_keys.get(k["id"])["name"], "tour")
        self.assertIn(k["id"], [x["id"] for x in self.live.api_keys.items(mode="page")])
        self.live.api_keys.revoke(k["id"])
        audit = self.live.account.audit_log(limit=50)
        done = [(e["action"], e["actor_kind"]) for e in audit["data"] if e["target"] == k["id"]]
        self.assertEqual(done, [("api_key.revoke", "api_key"), ("api_key.create", "api_key")])

        d = self.live.domains.create("tour-%s.example.com" % uuid.uuid4().hex[:6])
        self.assertEqual(self.live.domains.get(d["id"])["name"], d["name"])
        self.assertIn(d["id"], [x["id"] for x in self.live.domains.items()])
        with self.assertRaises(mailbolt.ConflictError) as cm:  # its first key is not published yet
            self.live.domains.rotate_dkim(d["id"])
        self.assertEqual(cm.exception.code, "CONFLICT")
        self.assertEqual(self.live.domains.delete(d["id"]).status_code, 204)

        t = c.templates.create(name="tour", subject="Hi {{name}}", text="Hello {{name}}")
        self.assertEqual(c.templates.get(t["id"])["name"], "tour")
        c.templates.update(t["id"], subject="Hey {{name}}")
        self.assertGreaterEqual(len(list(c.paginate(c.templates.list_versions, t["id"], limit=1))), 2)
        self.assertIn(t["id"], [x["id"] for x in c.templates.items()])
        rendered = c.templates.render(t["id"], {"name": "Ann"})
        self.assertEqual(rendered["subject"], "Hey Ann")

        w = c.webhooks.create(url="http://127.0.0.1:9/hook", events=["message.delivered"])
        self.assertTrue(w["secret"])
        self.assertEqual(c.webhooks.get(w["id"])["mode"], "test")
        self.assertNotEqual(c.webhooks.rotate_secret(w["id"])["secret"], w["secret"])
        self.assertEqual(c.webhooks.list_deliveries(w["id"]).data, [])
        self.assertIn(w["id"], [x["id"] for x in c.webhooks.items()])
        with self.assertRaises(mailbolt.NotFoundError):
            c.webhooks.replay_event(w["id"], str(uuid.uuid4()))
        self.assertEqual(c.webhooks.delete(w["id"]).status_code, 204)

        with self.assertRaises(mailbolt.NotFoundError):
            c.grader.result(str(uuid.uuid4()))

    def test_webhook_update_test_and_raw_source(self):
        import http.server
        import threading

        got = []

        class Receiver(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                got.append((body, dict(self.headers.items())))
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"got it")

            def log_message(self, *args):
                pass

        srv = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        url = "http://127.0.0.1:%d/hook" % srv.server_address[1]
        c = self.test
        w = c.webhooks.create(url=url + "/old", events=["message.sent"])
        self.assertIs(w["enabled"], True)
        up = c.webhooks.update(w["id"], url=url, events=["message.bounced"], enabled=False)
        self.assertEqual((up["url"], up["events"], up["enabled"]), (url, ["message.bounced"], False))
        self.assertNotIn("secret", up)
        with self.assertRaises(mailbolt.BadRequestError):
            c.webhooks.update(w["id"], events=["message.exploded"])

        res = c.webhooks.test(w["id"])
        self.assertEqual((res["success"], res["status_code"], res["response"], res["event"]), (True, 200, "got it", "webhook.test"))
        self.assertEqual(len(got), 1)
        body, headers = got[0]
        mailbolt.verify(body, headers, w["secret"])  # the secret from before the update
        self.assertEqual(json.loads(body)["id"], res["event_id"])

        m = c.messages.send(self.message(subject="Raw source"))
        raw = c.messages.raw(m["id"])
        self.assertIn(b"Subject: Raw source\r\n", raw)
        self.assertEqual(c.messages.raw(m["id"], "ANN@example.com"), raw)
        with self.assertRaises(mailbolt.BadRequestError) as cm:
            c.messages.raw(m["id"], "nobody@example.com")
        self.assertEqual(cm.exception.code, "VALIDATION_ERROR")


if __name__ == "__main__":
    unittest.main()
