"""HTTPS with an extra trusted root given through MAILBOLT_CA_FILE, against a local TLS stub
(skipped when the openssl command is missing: it makes the throwaway certificate)."""

import os
import shutil
import ssl
import subprocess
import tempfile
import unittest
from unittest import mock

import mailbolt

from .helpers import StubServer


@unittest.skipUnless(shutil.which("openssl"), "openssl is not installed")
class TLSTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        cls.cert = os.path.join(cls.dir, "cert.pem")
        cls.key = os.path.join(cls.dir, "key.pem")
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", cls.key, "-out", cls.cert, "-days", "2", "-subj", "/CN=127.0.0.1",
             "-addext", "subjectAltName=IP:127.0.0.1",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,digitalSignature,keyCertSign"],
            check=True, capture_output=True, timeout=60,
        )

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def stub(self, answers):
        server = StubServer(answers)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.cert, self.key)
        server.server.socket = ctx.wrap_socket(server.server.socket, server_side=True)
        server.url = server.url.replace("http://", "https://")
        return server

    def test_ca_file_from_the_environment(self):
        with self.stub([(200, {}, {"id": "acct"})]) as stub:
            with mock.patch.dict(os.environ, {"MAILBOLT_CA_FILE": self.cert}):
                client = mailbolt.Client("svc_live_x", stub.url)
            self.assertEqual(client.account.get()["id"], "acct")

    def test_unknown_root_is_refused(self):
        with self.stub([]) as stub:
            with mock.patch.dict(os.environ, {"MAILBOLT_CA_FILE": ""}):
                client = mailbolt.Client("svc_live_x", stub.url, timeout=10)
            with self.assertRaises(mailbolt.MailboltConnectionError):
                client.account.get()


if __name__ == "__main__":
    unittest.main()
