"""examples/run, as a user runs it."""

import os
import subprocess
import sys
import unittest

from .helpers import CLIENT_DIR, vector

RUN = os.path.join(CLIENT_DIR, "examples", "run")


def run(args, env, stdin=b""):
    full = dict(os.environ)
    full.update(env)
    return subprocess.run([RUN] + args, input=stdin, env=full, capture_output=True, timeout=60)


class ExamplesTest(unittest.TestCase):
    def setUp(self):
        self.v = vector()
        self.env = {
            "MAILBOLT_EXAMPLE_WEBHOOK_SECRET": self.v["secret"],
            "MAILBOLT_EXAMPLE_SIGNATURE": self.v["header"],
            "MAILBOLT_EXAMPLE_TIMESTAMP": str(self.v["timestamp"]),
            "MAILBOLT_EXAMPLE_NOW": str(self.v["timestamp"] + 10),
        }
        self.body = self.v["body"].encode()

    def test_verify_vector(self):
        out = run(["verify"], self.env, self.body)
        self.assertEqual((out.returncode, out.stdout), (0, b"valid\n"), out.stderr)

    def test_verify_rotation_with_comma_separated_secrets(self):
        env = dict(self.env, MAILBOLT_EXAMPLE_WEBHOOK_SECRET=self.v["previous_secret"] + "," + self.v["secret"],
                   MAILBOLT_EXAMPLE_SIGNATURE=self.v["header_during_rotation"])
        out = run(["verify"], env, self.body)
        self.assertEqual((out.returncode, out.stdout), (0, b"valid\n"), out.stderr)

    def test_verify_rejects(self):
        cases = [
            (self.env, self.body + b"\n"),  # tampered body
            (dict(self.env, MAILBOLT_EXAMPLE_NOW=str(self.v["timestamp"] + 301)), self.body),  # stale
            (dict(self.env, MAILBOLT_EXAMPLE_WEBHOOK_SECRET=self.v["previous_secret"]), self.body),  # wrong secret
        ]
        for env, body in cases:
            out = run(["verify"], env, body)
            self.assertEqual((out.returncode, out.stdout), (1, b"invalid\n"))

    @unittest.skipUnless(os.environ.get("MAILBOLT_BASE_URL") and os.environ.get("MAILBOLT_TEST_API_KEY"), "no server")
    def test_send_prints_the_id(self):
        env = {
            "MAILBOLT_API_KEY": os.environ["MAILBOLT_TEST_API_KEY"],
            "MAILBOLT_EXAMPLE_FROM": "app@example.com",
            "MAILBOLT_EXAMPLE_TO": "ann@example.com",
        }
        out = run(["send"], env)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.decode().splitlines()
        self.assertEqual(len(lines), 1)
        message_id = lines[0]
        sys.path.insert(0, CLIENT_DIR)
        import mailbolt

        got = mailbolt.Client(env["MAILBOLT_API_KEY"]).messages.get(message_id)
        self.assertEqual(got["id"], message_id)

    def test_usage(self):
        self.assertEqual(run(["nope"], {}).returncode, 2)


if __name__ == "__main__":
    unittest.main()
