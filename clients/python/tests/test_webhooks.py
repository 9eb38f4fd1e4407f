"""Webhook verification against testdata/webhooks/signature.json (spec §6)."""

import unittest

from mailbolt import webhooks
from mailbolt.webhooks import InvalidSignatureError, StaleTimestampError

from .helpers import vector


class VerifyTest(unittest.TestCase):
    def setUp(self):
        self.v = vector()
        self.body = self.v["body"].encode("utf-8")
        self.t = self.v["timestamp"]
        self.headers = {"X-Service-Signature": self.v["header"], "X-Service-Timestamp": str(self.t)}

    def test_sign_matches_vector(self):
        self.assertEqual(webhooks.sign(self.body, self.v["secret"], self.t), self.v["signature"])
        self.assertEqual(webhooks.sign(self.body, self.v["previous_secret"], self.t), self.v["previous_signature"])

    def test_valid(self):
        self.assertTrue(webhooks.verify(self.body, self.headers, self.v["secret"], now=self.t))
        # the clock may be off by up to 300 s either way; a callable clock works too
        self.assertTrue(webhooks.verify(self.body, self.headers, self.v["secret"], now=lambda: self.t + 300))
        self.assertTrue(webhooks.verify(self.body, self.headers, self.v["secret"], now=self.t - 300))
        # header names are case-insensitive; the signature value alone is accepted too
        self.assertTrue(webhooks.verify(self.body, {"x-service-signature": self.v["header"]}, self.v["secret"], now=self.t))
        self.assertTrue(webhooks.verify(self.body, self.v["header"], self.v["secret"], now=self.t))

    def test_tampered_body(self):
        with self.assertRaises(InvalidSignatureError):
            webhooks.verify(self.body + b" ", self.headers, self.v["secret"], now=self.t)
        tampered = self.body.replace(b"delivered", b"bounced")
        self.assertFalse(webhooks.is_valid(tampered, self.headers, self.v["secret"], now=self.t))

    def test_wrong_secret_or_timestamp(self):
        with self.assertRaises(InvalidSignatureError):
            webhooks.verify(self.body, self.headers, self.v["previous_secret"], now=self.t)
        forged = self.v["header"].replace("t=%d" % self.t, "t=%d" % (self.t + 1))
        with self.assertRaises(InvalidSignatureError):
            webhooks.verify(self.body, forged, self.v["secret"], now=self.t)
        # X-Service-Timestamp must equal t
        with self.assertRaises(InvalidSignatureError):
            webhooks.verify(self.body, {"X-Service-Signature": self.v["header"], "X-Service-Timestamp": str(self.t + 1)}, self.v["secret"], now=self.t)

    def test_stale_timestamp(self):
        for now in (self.t + 301, self.t - 301, self.t + 86400):
            with self.assertRaises(StaleTimestampError):
                webhooks.verify(self.body, self.headers, self.v["secret"], now=now)
        # a wider window is allowed
        self.assertTrue(webhooks.verify(self.body, self.headers, self.v["secret"], now=self.t + 600, tolerance=900))

    def test_rotation(self):
        rot = {"X-Service-Signature": self.v["header_during_rotation"]}
        # the receiver holds only the old secret, only the new one, or both
        for secrets in ([self.v["previous_secret"]], [self.v["secret"]], [self.v["previous_secret"], self.v["secret"]]):
            self.assertTrue(webhooks.verify(self.body, rot, *secrets, now=self.t), secrets)
        # a receiver that already has the new secret, while the sender still signs with the old one only
        old_only = "t=%d,v1=%s" % (self.t, self.v["previous_signature"])
        self.assertTrue(webhooks.verify(self.body, old_only, self.v["secret"], self.v["previous_secret"], now=self.t))
        with self.assertRaises(InvalidSignatureError):
            webhooks.verify(self.body, old_only, self.v["secret"], now=self.t)

    def test_malformed_headers(self):
        for bad in ("", "v1=" + self.v["signature"], "t=%d" % self.t, "t=abc,v1=" + self.v["signature"], "t=-1,v1=00", "garbage"):
            with self.assertRaises(InvalidSignatureError, msg=bad):
                webhooks.verify(self.body, {"X-Service-Signature": bad}, self.v["secret"], now=self.t)
        with self.assertRaises(InvalidSignatureError):
            webhooks.verify(self.body, {}, self.v["secret"], now=self.t)
        # unknown schemes are ignored
        self.assertTrue(webhooks.verify(self.body, self.v["header"] + ",v2=abc", self.v["secret"], now=self.t))

    def test_arguments(self):
        with self.assertRaises(ValueError):
            webhooks.verify(self.body, self.headers, now=self.t)
        with self.assertRaises(TypeError):
            webhooks.verify(self.v["body"], self.headers, self.v["secret"], now=self.t)
        with self.assertRaises(ValueError):
            webhooks.verify(self.body, self.headers, "not base64!", now=self.t)


if __name__ == "__main__":
    unittest.main()
