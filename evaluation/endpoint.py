"""One OpenAI-compatible chat endpoint, as evaluation.run (the audio LLM under test) and evaluation.judge
(the LLM judge) both talk to it: answers cached on disk by the hash of their request, so a rerun or a run
killed midway never sends a request twice; a failed request comes back as a Reply with its reason, while
a failure of the whole endpoint (unreachable, key rejected, model unknown) stops the command; and no
credential reaches a message, a cache file or a stored answer."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from construction.core.errors import WorkbenchError
from construction.core.redact import redact, url_password
from construction.core.workspace import atomic_write_text

MAX_ANSWER_CHARS = 20_000  # a stored answer is cut here: --max-tokens 1024 is ~5,000 characters, a server
# that ignores it must not fill responses.jsonl, the cache and the judge's prompt
MAX_REASON_CHARS = 500  # a failed request's reason (a server's error text) is cut here
# a text is cut to its limit plus this much before it is redacted, then to its limit: an echo of the key
# that starts before the limit is still masked whole, and a 10 MB answer costs no more than a short one
REDACT_MARGIN = 4_096


def request_key(model: str, variant: str, key_messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    blob = json.dumps({"model": model, "variant": variant, "messages": key_messages, "params": params},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


@dataclass
class Reply:
    text: str | None  # None when the request failed
    finish_reason: str | None
    error: str | None  # the reason, when text is None
    from_cache: bool
    key: str
    truncated: bool = False  # the answer was longer than MAX_ANSWER_CHARS and was cut


class ChatEndpoint:
    """An OpenAI-compatible chat endpoint with an on-disk answer cache keyed by the request's hash.

    Per-request failures (429/5xx after the client's retries, timeouts, empty or malformed answers) come
    back as a Reply with an error; failures of the whole endpoint raise WorkbenchError."""

    def __init__(self, base_url: str, model: str, api_key_env: str, cache_dir: Path, max_retries: int = 4,
                 timeout_s: float = 120.0, what: str = "model endpoint"):
        import openai

        for name in ("httpx", "httpx2", "httpcore", "openai"):  # one INFO line per request drowns the output
            logging.getLogger(name).setLevel(logging.WARNING)
        api_key = os.environ.get(api_key_env)
        if not api_key:
            raise WorkbenchError(f"the {what} key is read from ${api_key_env}, which is not set "
                                 "(servers that ignore keys, like a plain `vllm serve`, accept any value)")
        # the client gets the URL as given (user:password@ in it is basic auth); messages get it without,
        # and never the key, which servers echo ("Incorrect API key provided: sk-...")
        self.secrets = (api_key, url_password(base_url))
        self.openai, self.base_url, self.model = openai, redact(base_url, self.secrets), model
        self.api_key_env, self.what = api_key_env, what
        self.cache_dir = cache_dir  # made by the first answer written
        # the client retries connection errors, 408/409/429 and 5xx itself, with exponential backoff
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=max_retries,
                                    timeout=timeout_s)
        self.sent = 0
        self._lock = threading.Lock()

    def complete(self, messages: list[dict[str, Any]], params: dict[str, Any], key: str) -> Reply:
        path = self.cache_dir / f"{key}.json"
        if path.exists():
            cached = json.loads(path.read_text())
            # redacted again: a cache written before answers were redacted may hold the key
            return Reply(self._clean(cached["text"], MAX_ANSWER_CHARS)[0], cached.get("finish_reason"), None,
                         True, key, cached.get("truncated", False))
        oa = self.openai
        with self._lock:
            self.sent += 1
        try:
            response = self.client.chat.completions.create(model=self.model, messages=messages, **params)
        except (oa.AuthenticationError, oa.PermissionDeniedError) as exc:
            raise WorkbenchError(f"{self.base_url} rejected the key in ${self.api_key_env} "
                                 f"(HTTP {exc.status_code}): {self._message(exc)}") from None
        except oa.NotFoundError as exc:
            raise WorkbenchError(f"{self.base_url} has no chat endpoint or does not serve model '{self.model}' "
                                 f"(HTTP 404): {self._message(exc)}") from None
        except oa.APITimeoutError:
            return Reply(None, None, "timeout (after the client's retries)", False, key)
        except oa.APIConnectionError as exc:
            raise WorkbenchError(f"cannot reach the {self.what} at {self.base_url}: {self._message(exc)} "
                                 "(is the server running, and is the URL right, e.g. http://host:8000/v1?)") from None
        except oa.APIStatusError as exc:  # 429/5xx after retries, 400 (e.g. audio too long), 413, 422
            return Reply(None, None, f"http_{exc.status_code}: {self._message(exc)}", False, key)
        except (ValueError, oa.APIResponseValidationError) as exc:  # a body that is not chat JSON
            return Reply(None, None, f"malformed_response: {self._clean(str(exc), MAX_REASON_CHARS)[0]}",
                         False, key)
        try:
            choice = response.choices[0]
            message = choice.message
            text = message.content
            if not text and getattr(message, "refusal", None):  # OpenAI's structured refusal field
                text = message.refusal
        except (AttributeError, IndexError, TypeError) as exc:
            return Reply(None, None, f"malformed_response: no choices/message ({exc})", False, key)
        finish = getattr(choice, "finish_reason", None)
        finish = None if finish is None else self._clean(str(finish), 40)[0]  # a server's own string
        if not isinstance(text, str) or not text.strip():
            return Reply(None, finish, f"empty_response (finish_reason {finish})", False, key)
        # a server may echo the key in a normal answer: it is masked before anything stores or forwards it
        text, truncated = self._clean(text, MAX_ANSWER_CHARS)
        atomic_write_text(path, json.dumps({"model": self.model, "text": text, "finish_reason": finish,
                                            "truncated": truncated}, ensure_ascii=False))
        return Reply(text, finish, None, False, key, truncated)

    def _message(self, exc: Exception) -> str:
        return self._clean(_message(exc), MAX_REASON_CHARS)[0]

    def _clean(self, text: str, limit: int) -> tuple[str, bool]:
        """(the text cut to `limit` characters with every secret masked and no lone surrogate, whether it
        was cut). Cut first, then redacted: redact is linear, but a 10 MB answer is still 10 MB to scan."""
        window = text[:limit + REDACT_MARGIN]
        clean = well_formed(redact(window, self.secrets))
        return clean[:limit], len(text) > len(window) or len(clean) > limit


def well_formed(text: str) -> str:
    """The text with each lone surrogate (half an emoji, as a max_tokens cut leaves it) as U+FFFD: such a
    string cannot be written as UTF-8, so it would crash every write of the answer, on every rerun."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace") if _has_surrogate(text) else text


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if body.get("message"):
            return str(body["message"])
    return str(getattr(exc, "message", exc))
