"""Shared test helpers: a scripted local HTTP server and the repository's paths."""

import http.server
import json
import os
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT_DIR = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(CLIENT_DIR))


def vector():
    path = os.environ.get("MAILBOLT_WEBHOOK_VECTOR") or os.path.join(REPO, "testdata", "webhooks", "signature.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class StubServer:
    """Answers each request with the next scripted (status, headers, body) and records
    every request as (method, path, headers, body)."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.requests = []
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                # header names as sent by urllib are capitalised oddly (X-api-key): normalise them
                stub.requests.append((self.command, self.path, {k.title(): v for k, v in self.headers.items()}, body))
                status, headers, payload = stub.answers.pop(0) if stub.answers else (500, {}, {"error": {"code": "INTERNAL_ERROR", "message": "script ran out"}})
                raw = b"" if payload is None else json.dumps(payload).encode()
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(raw)))
                if raw:
                    self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = do_PUT = do_DELETE = _answer

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
