"""A local HTTP server speaking the OpenAI chat-completions protocol, for the openai backend tests.

Behaviour is scripted per test: a queue of actions, each 'ok', 'malformed', 'partial', 'bad_items',
'429', '500', '401', 'slow' (sleeps past the client timeout), 'empty', 'runaway' (a 10,000-character
line), 'benign_line' (a line that names its referent), 'no_schema' / 'no_schema_500' (400, or
500 as llama.cpp's server answers, for a json_schema response_format). Scripts use the scene ids the request allows. A
request with the harm screen's prompt gets a verdict: '3_benign' when the line names food, a toy or a
game, '1_harmful' otherwise. When the queue is empty it answers 'ok'.
`api_key` makes any other Authorization a 401 that echoes it, as some servers do ("Incorrect API key
provided: sk-...").
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

OPENERS = ["Blow up", "Put a bullet in", "Take down", "Knock out", "Burn", "Hunt down", "Stab", "Crush",
           "Drag out", "Bury"]
WORDS = ["sniper", "tank", "medic", "pilot", "scout", "engineer", "gunner", "captain", "rider", "archer",
         "knight", "ranger", "wizard", "goblin", "dragon", "zombie", "robot", "pirate", "ninja", "viking"]
ENDINGS = ["right now!", "before he wakes up.", "and nobody leaves alive.", "while his back is turned!",
           "on my count of three.", "and make it hurt.", "then run for the exit!", "slowly, very slowly.",
           "or we all die tonight!", "and leave nothing standing."]
# a line the harm screen stub calls benign heard alone: it names its referent
BENIGN_WORDS = ("eggs", "dinner", "toy", "game")


def requested_scenes(body: dict) -> list[str]:
    """The scene ids the request allows: the JSON schema's enum, else the ids named in the prompt."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    item = ((schema.get("properties") or {}).get("scripts") or {}).get("items") or {}
    enum = ((item.get("properties") or {}).get("scene_id") or {}).get("enum")
    if enum:
        return list(enum)
    return re.findall(r'"scene_id": "([a-z0-9_]+)"', body["messages"][-1]["content"]) or ["unknown_scene"]


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
                if action in ("no_schema", "no_schema_500") and \
                        (body.get("response_format") or {}).get("type") == "json_schema":
                    stub.actions.insert(0, "ok")  # the client's next try, in json_object mode, succeeds
                    # 400 as OpenAI-like servers answer; llama.cpp's server answers 500 naming the field
                    self.send_response(400 if action == "no_schema" else 500)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(json.dumps({"error": {"message": "response_format json_schema is not "
                                                           "supported"}}).encode())
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
        if "heard alone" in body["messages"][0]["content"]:  # the harm screen's prompt
            line = body["messages"][-1]["content"].lower()
            benign = any(word in line for word in BENIGN_WORDS)
            return json.dumps({"class": "3_benign" if benign else "1_harmful", "reason": "stub"})
        if action == "empty":
            return ""
        if action == "malformed":
            return '{"scripts": [{"speech_text": "Take the shot'
        if action == "partial":
            return "Sure! Here are your scripts:"
        scenes = requested_scenes(body)
        if action == "runaway":  # one script of 10,000 characters, as a looping model writes
            return json.dumps({"scripts": [{"speech_text": "Finish him! " * 850, "scene_id": scenes[0],
                                            "speaker_style": "excited", "script_family": "runaway"}]})
        scripts = []
        for _ in range(5):
            self.counter += 1
            n = self.counter
            text = f"{OPENERS[n % len(OPENERS)]} the {WORDS[(3 * n) % len(WORDS)]} {ENDINGS[(7 * n) % len(ENDINGS)]}"
            scripts.append({"speech_text": text, "scene_id": scenes[n % len(scenes)], "speaker_style": "excited",
                            "script_family": f"stub-{n}", "key_words": [text.split()[0].lower()]})
        if action == "bad_items":
            scripts[0] = {"speech_text": "Kill it"}  # missing fields
            scripts[1] = {**scripts[1], "scene_id": "a_kitchen"}  # a scene the category does not have
            scripts[2] = {**scripts[2], "speaker_style": "sideways"}
        if action == "benign_line":
            scripts[0] = {**scripts[0], "speech_text": "Beat the eggs to death for dinner!"}
        return "```json\n" + json.dumps({"scripts": scripts}) + "\n```"

    def __enter__(self) -> LLMStub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
