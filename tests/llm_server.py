"""A real OpenAI-compatible chat server on loopback, answering from a script (tests and bench/llm_provers.py).

It speaks HTTP: the agent under test uses the real `openai` client against it. Each request to
`/v1/chat/completions` is answered by `respond(request) -> Scripted`: a status (200, or 429 / 500 to make
the client retry), a delay (to make it time out), and the message content. `requests` records every
request body, `in_flight_max` the most requests it held at once.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Scripted:
    content: str = ""
    status: int = 200
    delay_s: float = 0.0
    tokens: int = 100


def answer(thought: str, **terms: str) -> str:
    """An `Answer` JSON text naming `terms` (name -> expression)."""
    return json.dumps({"thought": thought, "terms": [{"name": n, "expr": e} for n, e in terms.items()]})


def prompt_of(request: dict) -> str:
    """The text of a request's messages (what the agent showed the model)."""
    return "\n".join(str(m.get("content", "")) for m in request.get("messages", []))


class ScriptedServer:
    def __init__(self, respond: Callable[[dict], Scripted]):
        self.respond = respond
        self.requests: list[dict] = []
        self.in_flight = 0
        self.in_flight_max = 0
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._http.shutdown()
        self._http.server_close()

    def _reply(self, request: dict) -> Scripted:
        with self._lock:
            self.requests.append(request)
            self.in_flight += 1
            self.in_flight_max = max(self.in_flight_max, self.in_flight)
        try:
            scripted = self.respond(request)
            time.sleep(scripted.delay_s)
            return scripted
        finally:
            with self._lock:
                self.in_flight -= 1

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": "not found"}})
                scripted = server._reply(body)
                if scripted.status != 200:
                    return self._send(scripted.status, {"error": {"message": "scripted", "type": "rate_limit"}},
                                      {"retry-after-ms": "10"})
                self._send(200, {
                    "id": "chatcmpl-lark", "object": "chat.completion", "created": 0, "model": body.get("model", ""),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": scripted.content}}],
                    "usage": {"prompt_tokens": scripted.tokens - 10, "completion_tokens": 10,
                              "total_tokens": scripted.tokens}})

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):   # the client gave up (a timeout test)
                    pass

        return Handler
