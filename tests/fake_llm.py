"""A local fake OpenAI-compatible server (real HTTP on 127.0.0.1) for the LLM paths.

``FakeLLM(responder)`` serves ``POST /v1/chat/completions``; ``responder(system, user)`` returns
the answer text, or raises ``Slow(seconds, text)`` to answer late, or ``Broken(status)`` to fail.
Every request is recorded in ``.requests``. ``FakeLLM(responder, conversation=True)`` passes the
whole message list instead: ``responder(messages)`` (multi-turn repair, sampling).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Slow(Exception):
    def __init__(self, seconds: float, text: str) -> None:
        super().__init__(text)
        self.seconds, self.text = seconds, text


class Broken(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):  # the client gave up (timeout test): expected
        pass


class FakeLLM:
    def __init__(self, responder: Callable[..., str], conversation: bool = False) -> None:
        self.responder = responder
        self.conversation = conversation
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                msgs = body["messages"]
                system = next((m["content"] for m in msgs if m["role"] == "system"), "")
                user = next((m["content"] for m in msgs if m["role"] == "user"), "")
                try:
                    text = fake.responder(msgs) if fake.conversation else fake.responder(system, user)
                except Slow as slow:
                    time.sleep(slow.seconds)
                    text = slow.text
                except Broken as broken:
                    self.send_response(broken.status)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(json.dumps({"error": {"message": "scripted failure"}}).encode())
                    return
                payload = {"id": "fake", "object": "chat.completion", "created": 0, "model": body["model"],
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": text}}],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
