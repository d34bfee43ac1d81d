"""Benchmark `localagent serve` under N concurrent clients (default N = 1, 2, 4).

Usage: python scripts/bench_serve.py [--clients 1,2,4] [--requests 4] [--model NAME]
       [--threads N] [--max-tokens 8] [--url http://HOST:PORT/v1#MODEL]

Starts one real `localagent serve` on a free loopback port (unless --url names a running
server), waits for `GET /health`, then for each N runs N client threads that each send
`--requests` short constrained completions (a chat turn under a grammar that admits a
yes/no answer plus a number, the size of one ReAct-like decision) and prints a markdown
table: requests per minute over the wall time of the round, and latency p50 and max per
request (queueing included: the server runs one generation at a time, so latency grows
with N while throughput stays about flat). Every reply is checked against the grammar;
a failed or invalid reply counts as an error. The server is always stopped.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from localagent.constraint import Constraint
from localagent.llm.constrained import matches

GRAMMAR = 'start: ("yes" | "no") ", " /[0-9]{1,3}/'
CONSTRAINT = Constraint(kind="lark", source=GRAMMAR, name="bench")
REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Round:
    clients: int
    requests: int
    errors: int
    wall_s: float
    latencies: tuple[float, ...]

    @property
    def per_minute(self) -> float:
        return 60.0 * (self.requests - self.errors) / self.wall_s if self.wall_s else 0.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_server(model: str, threads: int, key: str) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    script = Path(sys.executable).parent / "localagent"
    process = subprocess.Popen(
        [str(script), "serve", "--model", model, "--port", str(port), "--api-key", key,
         "--threads", str(threads)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        cwd=REPO, env={**os.environ})
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"localagent serve exited: {process.stderr.read().decode()[-500:]}"
                             if process.stderr else "localagent serve exited")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return process, f"http://127.0.0.1:{port}/v1"
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    process.terminate()
    raise SystemExit("localagent serve did not come up within 300 s")


def _ask(url: str, model: str, key: str, n: int, max_tokens: int) -> tuple[float, bool]:
    body = {"model": model, "max_tokens": max_tokens, "temperature": 0,
            "messages": [{"role": "user", "content": f"Is {n} an even number? Answer yes or "
                          "no, then the number."}],
            "structured_outputs": {"grammar": GRAMMAR}}
    start = time.perf_counter()
    try:
        reply = httpx.post(f"{url}/chat/completions", json=body, timeout=600,
                           headers={"Authorization": f"Bearer {key}"})
        ok = reply.status_code == 200 and matches(
            CONSTRAINT, reply.json()["choices"][0]["message"]["content"])
    except (httpx.HTTPError, KeyError, ValueError):
        ok = False
    return time.perf_counter() - start, ok


def run_round(url: str, model: str, key: str, clients: int, per_client: int,
              max_tokens: int) -> Round:
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()

    def client(c: int) -> None:
        for r in range(per_client):
            seconds, ok = _ask(url, model, key, 100 * clients + 10 * c + r, max_tokens)
            with lock:
                latencies.append(seconds)
                errors[0] += 0 if ok else 1

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    return Round(clients, clients * per_client, errors[0], wall, tuple(latencies))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="1,2,4", help="comma-separated client counts")
    parser.add_argument("--requests", type=int, default=4, help="requests per client")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct", help="model to serve")
    parser.add_argument("--threads", type=int, default=0, help="llama.cpp threads (0: cores)")
    parser.add_argument("--max-tokens", type=int, default=8, help="tokens per reply at most")
    parser.add_argument("--url", help="a running server, URL#MODEL (else one is started)")
    args = parser.parse_args()
    key = "bench-key"
    process = None
    if args.url:
        url, _, model = args.url.partition("#")
        model = model or args.model
        key = os.environ.get("LOCALAGENT_API_KEY", "")
    else:
        process, url = _start_server(args.model, args.threads, key)
        model = args.model
    try:
        _ask(url, model, key, 0, args.max_tokens)  # warm-up: grammar compile, first prompt
        rounds = [run_round(url, model, key, int(n), args.requests, args.max_tokens)
                  for n in args.clients.split(",")]
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=30)
    print(f"model {model}, {args.requests} requests per client, max_tokens {args.max_tokens}")
    print("| clients | requests | errors | requests/min | p50 latency (s) | max latency (s) |")
    print("|---|---|---|---|---|---|")
    for r in rounds:
        print(f"| {r.clients} | {r.requests} | {r.errors} | {r.per_minute:.1f} | "
              f"{statistics.median(r.latencies):.2f} | {max(r.latencies):.2f} |")


if __name__ == "__main__":
    main()
