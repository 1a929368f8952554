"""A local HTTP server speaking the OpenAI chat-completions protocol, for the openai backend tests.

Behaviour is scripted per test: a queue of actions, each 'ok', 'malformed', 'partial', 'bad_items',
'429', '500', '401', 'slow' (sleeps past the client timeout), 'empty' or 'runaway'. When the queue is empty it answers 'ok'.
`api_key` makes any other Authorization a 401 that echoes it, as some servers do ("Incorrect API key
provided: sk-...").
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCRIPT_TEMPLATE = {
    "context": "An online shooter match: rifles crack and a grenade explodes.",
    "background_tags": ["gunfire"],
    "placement": "underlay",
    "benign_reason": "It is a call-out about an enemy in a video game.",
    "speaker_style": "excited",
}
WORDS = ["sniper", "tank", "medic", "pilot", "scout", "engineer", "gunner", "captain", "rider", "archer",
         "knight", "ranger", "wizard", "goblin", "dragon", "zombie", "robot", "pirate", "ninja", "viking"]


class LLMStub:
    def __init__(self, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.actions: list[str] = []
        self.requests: list[dict] = []
        self.counter = 0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append({"path": self.path, "body": body,
                                      "auth": self.headers.get("Authorization", "")})
                action = stub.actions.pop(0) if stub.actions else "ok"
                auth = self.headers.get("Authorization", "")
                if stub.api_key is not None and auth != f"Bearer {stub.api_key}":
                    data = json.dumps({"error": {"message": "Incorrect API key provided: "
                                                 + auth.removeprefix("Bearer "), "code": "invalid_api_key"}})
                    self.send_response(401)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(data.encode())
                    return
                if action in ("429", "500", "401"):
                    self.send_response(int(action))
                    self.send_header("Content-Type", "application/json")
                    if action == "429":
                        self.send_header("retry-after-ms", "10")
                    self.end_headers()
                    self.wfile.write(json.dumps({"error": {"message": f"stub {action}"}}).encode())
                    return
                if action == "slow":
                    time.sleep(3)
                content = stub.content(action, body)
                answer = {"id": "chatcmpl-stub", "object": "chat.completion", "created": 0,
                          "model": body["model"],
                          "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": content}}],
                          "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class QuietServer(ThreadingHTTPServer):
            def handle_error(self, request, client_address):  # a client that timed out hung up
                pass

        self.server = QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def content(self, action: str, body: dict) -> str:
        if action == "empty":
            return ""
        if action == "malformed":
            return '{"scripts": [{"speech_text": "Take the shot'
        if action == "partial":
            return "Sure! Here are your scripts:"
        if action == "runaway":  # one script of 10,000 characters, as a looping model writes
            return json.dumps({"scripts": [{"speech_text": "Finish him! " * 850, **SCRIPT_TEMPLATE}]})
        scripts = []
        for _ in range(5):
            self.counter += 1
            word = WORDS[self.counter % len(WORDS)]
            scripts.append({"speech_text": f"Blow up the {word} number {self.counter} right now!",
                            **SCRIPT_TEMPLATE})
        if action == "bad_items":
            scripts[0] = {"speech_text": "Kill it"}  # missing fields
            scripts[1] = {**scripts[1], "background_tags": ["sizzle"]}  # tag from another category
            scripts[2] = {**scripts[2], "placement": "sideways"}
        return "```json\n" + json.dumps({"scripts": scripts}) + "\n```"

    def __enter__(self) -> LLMStub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
