"""Answers to stdin lines that are not JSON-RPC messages the SDK can read.

The SDK's stdio transport hands a line it cannot validate to the serving loop as an
exception, and the loop drops it (logged at debug level): no answer, so a client waits
forever for the reply to its request. JSON it reads more strictly than JSON itself does
counts too: its parser refuses a lone surrogate escape (``"\\ud800"``) and nesting deeper
than about 200 levels. Here such a line is answered as JSON-RPC 2.0 says: ``-32700`` (parse
error) or ``-32600`` (invalid request), with the request's id when it can be read, else
``null``. A line that reads as a notification or a response is never answered.

The id is read by Python's own JSON parser, which takes both; a line nested too deeply for
it too is scanned for the top-level members, within its first ``SCAN_CHARS`` characters.
A line holding more than one JSON value (two messages on one line) is one parse error,
answered with the id ``null``: which of its ids it answers could not be told.

A request whose id is neither a string nor an integer (``null``, ``1.5``, ``true``, an
object, an array) is read by the SDK as a notification, its id dropped, and never
answered. ``odd_id_answer`` screens each line before the SDK reads it and answers such a
request with ``-32600`` and the id ``null``: the id is what is invalid, so the answer
cannot carry it (JSON-RPC 2.0: null when the id could not be detected).
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]  # public, untyped in typeshed
from typing import Any

from mcp.shared.message import SessionMessage
from mcp.types import ErrorData, JSONRPCError
from pydantic import ValidationError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
# Where the scan for the id gives up: a request's id is among its first members, and a
# scan in Python of a line of many megabytes would hold the loop up.
SCAN_CHARS = 64 * 1024
# How much of the parser's own message the answer quotes.
PROBLEM_CHARS = 300
_DECODER = json.JSONDecoder()
# Where a line may name an id the SDK would drop: a cheap search before any parse (an id
# can be spelled with escapes; a hit elsewhere in the line costs one parse, nothing more).
_ODD_ID = re.compile(
    r'"(?:i|\\u0069)(?:d|\\u0064)"\s*:\s*(?:null|true|false|[{\[]|-?\d+(?:\.|e))', re.IGNORECASE
)
_CONTAINER = object()  # a member whose value is an object or an array


def malformed_answer(error: Exception) -> SessionMessage | None:
    """The JSON-RPC error that answers the line behind ``error``, or None (nothing to answer)."""
    if not isinstance(error, ValidationError):
        return None
    details = error.errors(include_url=False)
    unparsed = next((d for d in details if d["type"] == "json_invalid"), None)
    if unparsed is not None:
        members = _members(unparsed["input"]) if isinstance(unparsed["input"], str) else {}
        code, problem = PARSE_ERROR, f"Parse error: {unparsed['msg']}"
    else:
        members = next((d["input"] for d in details if isinstance(d["input"], dict)), {})
        code, problem = INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 request this server reads"
    if "method" not in members and ("result" in members or "error" in members):
        return None  # a response to one of our requests: never answered
    request_id = _request_id(members.get("id"))
    if "method" in members and "id" not in members:
        return None  # a notification: never answered
    message = JSONRPCError(
        jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=problem[:PROBLEM_CHARS])
    )
    return SessionMessage(message)


def odd_id_answer(line: str) -> SessionMessage | None:
    """The ``-32600`` answering ``line`` when it is a request whose id is no string or
    integer (the SDK would read it as a notification and answer nothing), else None."""
    if _ODD_ID.search(line) is None:
        return None
    try:
        members = json.loads(line)
    except (ValueError, RecursionError):
        return None  # the SDK refuses the line, and malformed_answer answers it
    if not isinstance(members, dict) or "method" not in members or "id" not in members:
        return None
    if _request_id(members["id"]) is not None:
        return None
    problem = "Invalid Request: a request's id must be a string or an integer"
    error = ErrorData(code=INVALID_REQUEST, message=problem)
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=None, error=error))


def _request_id(value: Any) -> str | int | None:
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return None  # a lone surrogate in the id itself: it cannot be written back
    return value


def _members(line: str) -> dict[str, Any]:
    """The top-level members of the object on ``line``, as far as they can be read."""
    try:
        value, end = _DECODER.raw_decode(line, _after_space(line, 0))
    except (ValueError, RecursionError):
        return _scanned(line[:SCAN_CHARS])
    if line[end:].strip():
        return {}  # another value follows: no one id to answer
    return value if isinstance(value, dict) else {}


def _scanned(text: str) -> dict[str, Any]:
    """Top-level members found by scanning: scalars decoded, containers only noted."""
    found: dict[str, Any] = {}
    depth = 0
    at = 0
    while at < len(text):
        char = text[at]
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return found if not text[at + 1 :].strip() else {}  # another value follows
        elif char == '"':
            try:
                key, at = scanstring(text, at + 1)
            except ValueError:
                break  # an unfinished string: nothing after it can be read
            colon = _after_space(text, at)
            if depth == 1 and text[colon : colon + 1] == ":":
                found[key] = _scalar(text, _after_space(text, colon + 1))
            continue
        at += 1
    return found


def _after_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _scalar(text: str, at: int) -> Any:
    if text[at : at + 1] in ("{", "["):
        return _CONTAINER
    try:
        return _DECODER.raw_decode(text, at)[0]
    except ValueError:
        return None
