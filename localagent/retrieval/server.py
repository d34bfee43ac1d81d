"""Where a shared tool index lives: a Chroma server reached over HTTP.

Why a setting and not a flag per command: every process of a team (laptops, CI, a GPU box)
must search the same collection, so the server is chosen once, by `LOCALAGENT_CHROMA_URL`
(or `chroma_url` in the config file), and `LOCALAGENT_CHROMA_TOKEN` adds
`Authorization: Bearer <token>` for a reverse proxy that checks it (the open-source
`chroma run` has no authentication of its own; docs/deployment.md).

`ChromaServer.parse` accepts `http(s)://host[:port][/prefix]`; the port defaults to 8000
(Chroma's) for http and 443 for https. `check_reachable` asks `GET <url>/api/v2/heartbeat`
with a timeout before Chroma's client is built (that client waits without a time limit),
so an unreachable or refusing server is one `IndexError_` line (exit 2), never a hang.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from localagent.errors import IndexError_, UsageError

URL_ENV = "LOCALAGENT_CHROMA_URL"
TOKEN_ENV = "LOCALAGENT_CHROMA_TOKEN"
CONNECT_TIMEOUT_S = 10.0
HEARTBEAT_PATH = "/api/v2/heartbeat"


@dataclass(frozen=True)
class ChromaServer:
    """A Chroma server's address and the headers every request carries.

    `url` is the normalised base (scheme, host, port, optional path prefix), never the token;
    it is what messages print.
    """

    url: str
    host: str
    port: int
    ssl: bool
    prefix: str  # "" or a path such as "/chroma" when a proxy serves Chroma under one
    token: str | None = field(default=None, repr=False)  # never printed

    @classmethod
    def parse(cls, url: str, token: str | None = None) -> ChromaServer:
        """The server at `url`; UsageError (exit 2) for anything that is not http(s)://host."""
        text = url.strip()
        try:
            parts = urlsplit(text)
            port = parts.port
        except ValueError as exc:
            raise UsageError(f"{URL_ENV} = {url!r}: {exc}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(
                f"{URL_ENV} = {url!r}: expected http://HOST:PORT or https://HOST[:PORT][/PREFIX]"
            )
        if parts.query or parts.fragment or parts.username or parts.password:
            raise UsageError(
                f"{URL_ENV} = {url!r}: no query, fragment or user:password in the URL "
                f"(put a token in {TOKEN_ENV})"
            )
        ssl = parts.scheme == "https"
        port = port or (443 if ssl else 8000)
        prefix = parts.path.rstrip("/")
        host = parts.hostname
        shown = f"[{host}]" if ":" in host else host
        return cls(
            url=f"{parts.scheme}://{shown}:{port}{prefix}",
            host=host,
            port=port,
            ssl=ssl,
            prefix=prefix,
            token=token.strip() if token and token.strip() else None,
        )

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def check_reachable(self, timeout: float = CONNECT_TIMEOUT_S) -> None:
        """One heartbeat with a timeout; IndexError_ naming the cause when it fails."""
        request = urllib.request.Request(self.url + HEARTBEAT_PATH, headers=self.headers())
        hint = f"start one with `chroma run --path DIR --port {self.port}` or fix {URL_ENV}"
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                body = json.loads(response.read(4096) or b"{}")
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                raise IndexError_(
                    f"the Chroma server at {self.url} refused the request "
                    f"(HTTP {exc.code} {exc.reason})",
                    hint=f"set {TOKEN_ENV} to the token the proxy expects",
                ) from None
            raise IndexError_(
                f"the Chroma server at {self.url} answered HTTP {exc.code} {exc.reason} "
                f"to {HEARTBEAT_PATH}",
                hint=hint,
            ) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise IndexError_(
                f"cannot reach the Chroma server at {self.url}: {reason}", hint=hint
            ) from None
        if not isinstance(body, dict) or not any("heartbeat" in str(k) for k in body):
            raise IndexError_(
                f"{self.url} answered {HEARTBEAT_PATH} but not as a Chroma server", hint=hint
            )

    def client(self) -> object:
        """Chroma's `HttpClient` for this server, telemetry off (reachability checked first)."""
        import chromadb
        from chromadb.config import Settings

        self.check_reachable()
        # A path prefix is passed as a full URL: Chroma's client then keeps the path and
        # appends /api/v2 (chromadb.api.base_http_client.resolve_url).
        host = self.url if self.prefix else self.host
        return chromadb.HttpClient(
            host=host,
            port=self.port,
            ssl=self.ssl,
            headers=self.headers() or None,
            settings=Settings(anonymized_telemetry=False),
        )
