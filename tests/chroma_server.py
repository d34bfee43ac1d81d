"""A real `chroma run` for tests: loopback, a free port, a readiness poll, always shut down."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from conftest import stop_process

CHROMA = Path(sys.executable).parent / "chroma"
READY_WITHIN_S = 120.0  # a start-up limit, not an assertion on speed


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _heartbeat(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/api/v2/heartbeat", timeout=2) as response:
            return "nanosecond heartbeat" in json.loads(response.read())
    except (OSError, ValueError):
        return False


@contextmanager
def chroma_server(data: Path) -> Iterator[str]:
    """Yields the base URL of a `chroma run --path DATA` on 127.0.0.1; stops it afterwards."""
    port = free_port()
    log = (data.parent / f"{data.name}-chroma.log").open("w")
    proc = subprocess.Popen(
        [str(CHROMA), "run", "--path", str(data), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_WITHIN_S
        while not _heartbeat(url):
            if proc.poll() is not None:
                raise RuntimeError(f"chroma run exited with {proc.returncode}; see {log.name}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"chroma run not ready after {READY_WITHIN_S:.0f} s")
            time.sleep(0.2)
        yield url
    finally:
        stop_process(proc, timeout=15)
        log.close()


@contextmanager
def token_proxy(upstream: str, token: str, prefix: str = "") -> Iterator[str]:
    """A minimal reverse proxy that serves `upstream` under PREFIX and answers 401 unless
    the request carries `Authorization: Bearer TOKEN` (what Caddy or nginx do in
    docs/deployment.md). Yields the proxy's URL, prefix included."""
    import http.client
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import urlsplit

    target = urlsplit(upstream)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            if (self.headers.get("Authorization") != f"Bearer {token}"
                    or not self.path.startswith(prefix + "/")):
                self.send_response(401)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
            headers = {k: v for k, v in self.headers.items()
                       if k.lower() not in ("host", "authorization", "connection")}
            conn.request(self.command, self.path[len(prefix):], body=body, headers=headers)
            reply = conn.getresponse()
            data = reply.read()
            self.send_response(reply.status)
            for key, value in reply.getheaders():
                if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            conn.close()

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{prefix}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
