"""A scripted stand-in for the Anthropic Messages API (and OpenAI's Responses API), on
127.0.0.1, for the real hosts.

The real Claude Code CLI is pointed at it with ``ANTHROPIC_BASE_URL``, the real Codex CLI
with a custom provider's ``base_url`` (``POST .../responses``). Every request is recorded
whole, then answered by the scenario's policy: a function that reads the request (the tools
offered, the tool results, the reminders the hooks added) and returns the next step, as a
compliant agent would choose it: a tool call, a closing text, or an API error. A Messages
answer is streamed as server-sent events when the request asks for a stream, else sent as
one JSON message; a Responses answer is always streamed, as Codex asks.

Requests without tools (the host's own side calls: a title, a summary) are answered with a
short text and not shown to the policy. Standard library only: the server runs in a thread
of the test process.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# The error bodies the API sends, by status (types from the Messages API's error reference).
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class ToolCall:
    """Call ``name`` with ``input``: arguments, or the whole text a freeform tool takes (the
    Responses API's custom tools, such as Codex's ``apply_patch``)."""

    name: str
    input: dict[str, Any] | str


@dataclass(frozen=True)
class Say:
    """End the turn with ``text``."""

    text: str


@dataclass(frozen=True)
class Fail:
    """Answer with an API error of ``status``."""

    status: int
    message: str = "scripted failure"


Step = ToolCall | Say | Fail


@dataclass
class Turn:
    """One request of the agent's loop, as the policy reads it."""

    body: dict[str, Any]
    at: float  # time.monotonic() when it arrived
    wire: str = "messages"  # the API asked: Anthropic's Messages, or OpenAI's Responses
    reply: Step | None = None  # what the policy answered it
    replied_at: float | None = None

    @property
    def tools(self) -> list[str]:
        """The names of the tools offered."""
        return [tool.get("name", "") for tool in self.body.get("tools") or []]

    def blocks(self) -> Iterator[dict[str, Any]]:
        """Every content block of the last message (the user's turn: results, reminders);
        for the Responses API, every input item since the model's last one, as blocks."""
        if self.wire == "responses":
            yield from _items_since_model(self.body.get("input") or [])
            return
        messages = self.body.get("messages") or []
        if not messages:
            return
        content = messages[-1].get("content")
        if isinstance(content, str):
            yield {"type": "text", "text": content}
            return
        yield from content or []

    def results(self) -> list[str]:
        """The text of each tool result in the last message."""
        found = []
        for block in self.blocks():
            if block.get("type") == "tool_result":
                found.append(_flatten(block.get("content")))
        return found

    @property
    def last_text(self) -> str:
        """Everything the last message says: results and text blocks (reminders included)."""
        parts = []
        for block in self.blocks():
            if block.get("type") == "tool_result":
                parts.append(_flatten(block.get("content")))
            elif block.get("type") == "text":
                parts.append(block.get("text", ""))
        return "\n".join(parts)

    @property
    def all_text(self) -> str:
        """Every text the conversation holds, the system prompt included."""
        return json.dumps(self.body, ensure_ascii=False)


# What the model itself put in a Responses conversation.
MODEL_ITEMS = ("function_call", "custom_tool_call", "reasoning")


def _items_since_model(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The Responses API's input items after the model's last call or message, each as a
    Messages API block: a call's output as a tool result, any other message as text."""
    last = max(
        (
            i
            for i, item in enumerate(items)
            if item.get("type") == "function_call" or item.get("role") == "assistant"
        ),
        default=-1,
    )
    for item in items[last + 1 :]:
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            yield {"type": "tool_result", "content": item.get("output")}
        elif item.get("type") == "message":
            yield {"type": "text", "text": _flatten(item.get("content"))}


def _flatten(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_flatten(item) for item in content)
    if isinstance(content, dict):
        return str(content.get("text") or content.get("content") or "")
    return ""


Policy = Callable[[Turn, list[Turn]], Step]


@dataclass
class ScriptedModel:
    """The server's state: the policy, and every request of the agent's loop, in order."""

    policy: Policy
    turns: list[Turn] = field(default_factory=list)
    side_calls: int = 0
    statuses: list[int] = field(default_factory=list)  # what each loop request was answered
    lock: threading.Lock = field(default_factory=threading.Lock)
    arrived: threading.Condition = field(init=False)
    _ids: Iterator[int] = field(default_factory=itertools.count)
    url: str = ""

    def __post_init__(self) -> None:
        self.arrived = threading.Condition(self.lock)

    def next_id(self) -> int:
        with self.lock:
            return next(self._ids)

    def wait_until(self, condition: Callable[[list[Turn]], bool], timeout: float) -> bool:
        """Wait until ``condition(turns)`` holds (checked at each request and each reply)."""
        with self.arrived:
            return self.arrived.wait_for(lambda: condition(self.turns), timeout)

    def called(self, tool: str) -> list[Turn]:
        """The requests the policy answered with a call of ``tool``."""
        with self.lock:
            return [t for t in self.turns if isinstance(t.reply, ToolCall) and t.reply.name == tool]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, *_: Any) -> None:
        return  # the test's output stays the test's

    def do_GET(self) -> None:
        self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        path = self.path.split("?", 1)[0]
        if path.endswith("/count_tokens"):
            self._json(200, {"input_tokens": max(1, len(raw) // 4)})
            return
        wire = "responses" if path.endswith("/responses") else "messages"
        if wire == "messages" and not path.endswith("/v1/messages"):
            self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
            return
        body = json.loads(raw or b"{}")
        model = self.server.model
        reply = self._reply if wire == "messages" else self._respond
        if not body.get("tools"):
            with model.lock:
                model.side_calls += 1
            reply(body, Say("ok"))
            return
        turn = Turn(body=body, at=time.monotonic(), wire=wire)
        with model.arrived:
            history = list(model.turns)
            model.turns.append(turn)
            model.arrived.notify_all()
        try:
            step = model.policy(turn, history)
        except Exception as error:  # noqa: BLE001 - a policy's bug ends the run, visibly
            step = Fail(400, f"the scripted policy failed: {error!r}")
        with model.arrived:
            model.statuses.append(step.status if isinstance(step, Fail) else 200)
            turn.reply, turn.replied_at = step, time.monotonic()
            model.arrived.notify_all()
        reply(body, step)

    def _respond(self, body: dict[str, Any], step: Step) -> None:
        """``step`` as the Responses API streams it (the only form Codex asks for)."""
        if isinstance(step, Fail):
            error = {"error": {"type": ERROR_TYPES.get(step.status, "api_error"), "message": step.message}}
            self._json(step.status, error, headers={"retry-after": "0"})
            return
        number = self.server.model.next_id()
        if isinstance(step, ToolCall) and isinstance(step.input, str):
            item: dict[str, Any] = {
                "type": "custom_tool_call",
                "id": f"ctc_scripted{number:04d}",
                "call_id": f"call_scripted{number:04d}",
                "name": step.name,
                "input": step.input,
            }
        elif isinstance(step, ToolCall):
            item = {
                "type": "function_call",
                "id": f"fc_scripted{number:04d}",
                "call_id": f"call_scripted{number:04d}",
                "name": step.name,
                "arguments": json.dumps(step.input),
            }
        else:
            text = {"type": "output_text", "text": step.text, "annotations": []}
            item = {
                "type": "message",
                "id": f"msg_scripted{number:04d}",
                "role": "assistant",
                "content": [text],
            }
        usage = {"input_tokens": 10, "output_tokens": 10, "total_tokens": 20}
        response = {"id": f"resp_scripted{number:04d}", "object": "response", "model": body.get("model")}
        events = [
            ("response.created", {"type": "response.created", "response": response}),
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": item},
            ),
            ("response.completed", {"type": "response.completed", "response": {**response, "usage": usage}}),
        ]
        self._events(events)

    def _reply(self, body: dict[str, Any], step: Step) -> None:
        if isinstance(step, Fail):
            error = {
                "type": "error",
                "error": {"type": ERROR_TYPES.get(step.status, "api_error"), "message": step.message},
            }
            self._json(step.status, error, headers={"retry-after": "0", "x-should-retry": "true"})
            return
        number = self.server.model.next_id()
        if isinstance(step, ToolCall):
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": f"toolu_scripted{number:04d}",
                "name": step.name,
                "input": step.input,
            }
            stop = "tool_use"
        else:
            block = {"type": "text", "text": step.text}
            stop = "end_turn"
        message = {
            "id": f"msg_scripted{number:04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "scripted"),
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10},
        }
        if body.get("stream"):
            self._stream(message, block)
        else:
            self._json(200, message)

    def _stream(self, message: dict[str, Any], block: dict[str, Any]) -> None:
        start = {**message, "content": [], "stop_reason": None}
        if block["type"] == "tool_use":
            opening = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        events = [
            ("message_start", {"type": "message_start", "message": start}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": opening}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": 10},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        self._events(events)

    def _events(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        payload = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _json(self, status: int, data: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, model: ScriptedModel) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.model = model


@contextmanager
def serve(policy: Policy) -> Iterator[ScriptedModel]:
    """A scripted model answering with ``policy`` on a free loopback port while in use."""
    model = ScriptedModel(policy=policy)
    server = _Server(model)
    model.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="scripted-model", daemon=True)
    thread.start()
    try:
        yield model
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
