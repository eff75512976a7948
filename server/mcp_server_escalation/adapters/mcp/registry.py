"""Building the SDK's ``Tool`` objects for our tools, fast and fully described.

Start-up cost decides the shape: cold start must stay within 1.15x of a minimal
``MCPServer`` (benchmarks/README.md). The SDK's decorator derives both JSON Schemas of
every tool at import time; we build each ``Tool`` from its argument model (which validation needs anyway) and
the schemas generated ahead of time into ``schemas/tools/`` (``python -m
mcp_server_escalation.adapters.mcp.schemas``; a test fails when they differ from the models).
Descriptions then come from ``prompts/tools.toml``, strictly: every tool and argument.

What every tool does alike is done here once: the tool function receives its ``call``
(what the request brings: the runtime, the caller), and a domain error it raises becomes
the tool error the model reads.
"""

from __future__ import annotations

import functools
import inspect
import json
import types
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, Literal, Protocol, Union, get_args, get_origin

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from ... import deadlines
from ...datafiles import data_dir
from ...errors import ConfigError, EscalationError, StoreUnavailable
from ...models.limits import RESULT_MAX_BYTES
from ...prompts import PromptBook
from ...rules.bounds.results import fit
from ...rules.wording.argument_errors import argument_error_words
from .flat_schemas import flat_schema, input_schema

ToolFunction = Callable[..., Awaitable[BaseModel]]
# What a tool function receives first, from the request's context (never an argument).
CALL_PARAMETER = "call"
# The name the SDK passes the request's context under, to the function it calls.
CONTEXT_PARAMETER = "ctx"
COMPACT = (",", ":")  # json.dumps separators without spaces
# A result whose compact JSON is longer than this (characters) is not copied into its text:
# the text names where the whole result is instead. Shorter ones keep the JSON as their text,
# for clients that show the model the text alone; a long one copied would double the answer.
JSON_TEXT_MAX = 2048
# A call that asks to wait for an answer (get_escalation's ``wait_seconds``, at most
# ``WAIT_MAX_SECONDS``) has that wait on top of the store's bound in its deadline.
WAIT_ARGUMENT = "wait_seconds"


class Caller(Protocol):
    """What ``bind`` makes of a request's context: the tool function's first argument."""

    async def within_scope(self, tool: str, arguments: Mapping[str, Any]) -> None:
        """Raise a domain error when the caller may not make this call (its token's scope)."""

    def store_seconds(self) -> float:
        """The longest a call waits for the store, in all: its deadline, before any wait it asks for."""


class LazyArguments(ArgModelBase):
    """The SDK's argument base, for models created and built at a tool's first call
    (``ArgumentMetadata``), not at start-up."""

    model_config = ConfigDict(arbitrary_types_allowed=True, defer_build=True)

    def model_dump_one_level(self) -> dict[str, Any]:
        # The SDK's version looks up each field's alias; ours have none (argument_metadata).
        # The fields' values as pydantic holds them: dict(self) asked the model for a
        # ``keys`` attribute first, and pydantic's failed look-up of it cost ~20 us a call.
        return dict(self.__dict__)


class _NotBuiltYet(LazyArguments):
    """Stands in for a tool's argument model until its first call builds the real one."""


class ArgumentsRefused(ValidationError):
    """pydantic's refusal of a call's arguments, read as the words the model is told.

    The SDK reports a ``ValidationError`` raised here as the tool error the model reads,
    in its text (``str(exc)``); anything else raised here it takes for a crash and says
    nothing. So the words travel in a ``ValidationError`` of our own: its text is
    ``rules/wording/argument_errors.py``'s, not pydantic's report with its reprs of the
    input (``tests/test_bad_input.py`` fails when the SDK stops reporting it so)."""

    words: str = ""

    def __str__(self) -> str:
        return self.words


class ArgumentMetadata(FuncMetadata):
    """The SDK's ``FuncMetadata``, with the argument model built at the tool's first call,
    and JSON sent inside a string unpacked only where the argument cannot be a string.

    Building sixteen argument models (evaluating every annotation, creating the classes)
    cost ~7 ms of cold start although the published input schemas already describe them;
    now a tool never called never pays.

    Some hosts send a list or an object as a JSON string, and the SDK parses every string
    argument whose type is not exactly ``str`` to undo that. That also parsed an optional
    text such as ``observed_outcome='{"status": 500}'`` into a dict, and the call failed
    validation. Here only the arguments that admit no string (lists, objects, numbers,
    models) are parsed, by the SDK's rule; the rest are checked as sent.

    ``FuncMetadata`` is not exported by ``mcp.server.mcpserver``: ``tests/test_sdk_private.py``
    fails when the SDK's ``Tool.run`` stops validating a call through this class.
    """

    fn: Any = Field(default=None, exclude=True)
    json_arguments: frozenset[str] = frozenset()
    # The words of a refusal (None: pydantic's own report, as in the schema checks)
    prompts: Any = Field(default=None, exclude=True)

    def arguments_model(self) -> type[ArgModelBase]:
        """The argument model, built on first use (``arg_model`` holds it from then on)."""
        if self.arg_model is _NotBuiltYet:
            self.arg_model, self.json_arguments = _argument_model(self.fn)
        return self.arg_model

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        model = self.arguments_model()
        try:
            return model.model_validate(self.pre_parse_json(arguments_to_validate)).model_dump_one_level()
        except ValidationError as exc:
            if self.prompts is None:
                raise
            refused = ArgumentsRefused.from_exception_data(exc.title, [])
            refused.words = argument_error_words(self.prompts, exc.errors(include_url=False))
            raise refused from None

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        self.arguments_model()  # json_arguments is known once the model is
        parsed = data
        for name in self.json_arguments.intersection(data):
            value = data[name]
            if not isinstance(value, str):
                continue
            try:
                decoded = json.loads(value)
            except (ValueError, RecursionError):
                continue  # not JSON: validation says what is wrong with it
            if not isinstance(decoded, str | int | float):
                parsed = {**parsed, name: decoded}
        return parsed


def admits_text(annotation: Any) -> bool:
    """Can a string, as sent, be a value of ``annotation``?"""
    origin = get_origin(annotation)
    if origin is Annotated:
        return admits_text(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return any(admits_text(member) for member in get_args(annotation))
    if origin is Literal:
        return any(isinstance(value, str) for value in get_args(annotation))
    return annotation is Any or (isinstance(annotation, type) and issubclass(annotation, str))


def argument_metadata(fn: ToolFunction, prompts: PromptBook | None = None) -> ArgumentMetadata:
    """What the SDK's ``func_metadata`` builds for our tools, its model built when first needed;
    a refusal worded from ``prompts``."""
    return ArgumentMetadata(arg_model=_NotBuiltYet, fn=fn, prompts=prompts)


@functools.cache
def _argument_model(fn: ToolFunction) -> tuple[type[LazyArguments], frozenset[str]]:
    """One model of the arguments, and the arguments that admit no string.

    The same model as the SDK's (field per parameter, its annotation and default, the
    call parameter left out), on a base that defers building; ``tests/test_schemas.py``
    checks its schema against the published one, and the bad-input tests its errors.

    Built once per tool function and process: the model depends on the signature alone.
    A served process builds one server, but the test suite builds one per test, and
    building each tool's model again (~5 ms a tool) was a tenth of an in-memory test's CPU.
    """
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn, eval_str=True).parameters.values():
        if param.name == CALL_PARAMETER:
            continue
        if hasattr(BaseModel, param.name) or param.name.startswith("_"):
            raise TypeError(f"{fn.__name__}: parameter {param.name!r} would shadow the argument model")
        required = param.default is inspect.Parameter.empty
        fields[param.name] = (param.annotation, ... if required else param.default)
    model = create_model(f"{fn.__name__}Arguments", __base__=LazyArguments, **fields)
    if any(field.alias for field in model.model_fields.values()):
        raise TypeError(f"{fn.__name__}: argument aliases are not supported")
    json_arguments = frozenset(
        name for name, field in model.model_fields.items() if not admits_text(field.annotation)
    )
    return model, json_arguments


@functools.cache
def _published_output(tool: str) -> dict[str, Any] | None:
    """A tool's published output schema, read once per process and shared by every server
    built in it (nothing writes into it). Four fifths of the published bytes, parsed again at
    every server built: a fifth of building one, which every in-memory test session does."""
    return _published(f"{tool}.output.json")


def _published(name: str) -> dict[str, Any] | None:
    # An input schema is read afresh for each Tool: describe_tools writes the descriptions
    # into it, so a shared copy would need copying anyway.
    path = data_dir("schemas") / "tools" / name
    if not path.is_file():
        return None
    loaded = json.loads(path.read_text(encoding="utf-8"))
    return loaded if isinstance(loaded, dict) else None


def unavailable_text(prompts: PromptBook, exc: StoreUnavailable) -> str:
    """What the model reads when the store did not answer: nothing (or maybe something) was
    recorded, and what to do next. Never "nothing" once a write of the call committed, or
    when the answer to its COMMIT was lost. Not why: what the database said, and where it
    is, are the operator's, in the log the store writes once per outage (a line per call
    would flood it)."""
    nothing = exc.recorded is False and not deadlines.has_written()
    template = "store_unavailable" if nothing else "store_outcome_unknown"
    return prompts.render(template)


def call_seconds(caller: Caller | None, arguments: Mapping[str, Any]) -> float | None:
    """The deadline of one call: the store's bound, and the wait it asks for on top."""
    if caller is None:
        return None
    wait = arguments.get(WAIT_ARGUMENT)
    return caller.store_seconds() + (float(wait) if isinstance(wait, int | float) else 0.0)


def tool_result(
    fn: ToolFunction,
    text: str | None,
    bind: Callable[[Any], Caller | None],
    prompts: PromptBook | None = None,
) -> Callable[..., Awaitable[CallToolResult]]:
    """``fn`` called with ``bind(context)`` first, answering with its whole result as
    ``structuredContent``, and as the text the model reads either the ``text`` field of it
    or, without one, the result as compact JSON.

    A call outside the scope of the caller's token is refused before ``fn`` runs, for every
    tool alike (``Caller.within_scope``). A domain error (``EscalationError``) becomes a
    tool error whose text tells the model how to fix the call; anything else is a bug, which
    the SDK reports without its text.
    A store that does not answer is no fault of the call: the model is told, in the words of
    prompts/, that nothing was recorded (or that it may have been) and what to do meanwhile.
    The whole call has one deadline (``call_seconds``): the store's waits inside share it.

    The feedback and guidance tools name their rendered text: the model reads it as written
    instead of JSON-escaped inside a copy of the structured result, which would double the
    payload. The others' text is their JSON without indentation (the SDK indents by two):
    the same result in fewer characters and tokens of the model's context; once that is
    longer than ``JSON_TEXT_MAX``, the text is the result's message and where the whole
    result is (its structured content, which hosts give the model in place of the text).
    The result is the model's own dump, so it is not validated again on the way out.

    A result larger than ``RESULT_MAX_BYTES`` (texts stored at their input limits) is shown
    with its longest texts clipped (``rules/bounds/results.py``): the resources hold them whole.
    """

    async def call(ctx: Any, **arguments: Any) -> CallToolResult:
        bound = bind(ctx)
        seconds = call_seconds(bound, arguments)
        if seconds is None:
            result = await _served(fn, bound, arguments, prompts)
        else:
            # One deadline for the whole call: every wait of the store inside (its turn in a
            # queue, a lock, a connection, an answer) reads what is left of it, so their sum
            # cannot pass it (deadlines.py). No cancel scope around the call on top: the store
            # is where a call waits, and each scope costs every call.
            with deadlines.call_deadline(seconds):
                result = await _served(fn, bound, arguments, prompts)
        return _answer(result, text, prompts)

    return call


async def _served(
    fn: ToolFunction, bound: Caller | None, arguments: dict[str, Any], prompts: PromptBook | None
) -> BaseModel:
    """``fn``'s result, a domain error raised as the tool error the model reads."""
    try:
        if bound is not None:
            await bound.within_scope(fn.__name__, arguments)
        return await fn(bound, **arguments)
    except StoreUnavailable as exc:
        if prompts is None:
            raise ToolError(str(exc)) from exc
        raise ToolError(unavailable_text(prompts, exc)) from exc
    except EscalationError as exc:
        raise ToolError(str(exc)) from exc


def _answer(result: BaseModel, text: str | None, prompts: PromptBook | None) -> CallToolResult:
    """The call's result as the client receives it: structured, and the text the model reads."""
    structured = result.model_dump(mode="json", by_alias=True)
    shown = _shown(structured, text)
    # A character costs at most four bytes: only a long text needs measuring.
    if len(shown) > RESULT_MAX_BYTES // 4 and len(shown.encode()) > RESULT_MAX_BYTES:
        structured = fit(structured, RESULT_MAX_BYTES)
        shown = _shown(structured, text)
    if text is None and prompts is not None and len(shown) > JSON_TEXT_MAX:
        shown = prompts.render("tool_result_in_structured", message=structured.get("message", ""))
    return CallToolResult(content=[TextContent(type="text", text=shown)], structured_content=structured)


def shown_text(structured: dict[str, Any]) -> str:
    """What the model reads of a result that names no text field: the result as compact JSON."""
    return _shown(structured, None)


def _shown(structured: dict[str, Any], text: str | None) -> str:
    """What the model reads of a result: its ``text`` field, else the result as compact JSON."""
    return str(structured[text]) if text else json.dumps(structured, ensure_ascii=False, separators=COMPACT)


def structured_tool(
    fn: ToolFunction,
    annotations: ToolAnnotations,
    bind: Callable[[Any], Caller | None],
    *,
    use_published: bool = True,
    text: str | None = None,
    prompts: PromptBook | None = None,
) -> Tool:
    """A ``Tool`` with a structured result, published flattened (``tool_result``), whose
    function takes ``bind(context)`` as its first parameter, named ``call``."""
    if next(iter(inspect.signature(fn).parameters), None) != CALL_PARAMETER:
        raise TypeError(f"{fn.__name__}: a tool's first parameter is {CALL_PARAMETER!r}")
    metadata = argument_metadata(fn, prompts)
    # The return annotation is a plain class name of the defining module (postponed
    # annotations); looking it up avoids evaluating every annotation at start-up.
    returns = fn.__annotations__["return"]
    result_model = fn.__globals__[returns] if isinstance(returns, str) else returns
    name = fn.__name__
    output = _published_output(name) if use_published else None
    parameters = _published(f"{name}.input.json") if use_published else None
    # Hand-built structured output, as the SDK documents it: the fields are read live.
    metadata.output_model = None
    metadata.output_schema = output or flat_schema(result_model)
    return Tool(
        fn=tool_result(fn, text, bind, prompts),
        name=name,
        description=fn.__doc__ or name,
        parameters=parameters or input_schema(metadata.arguments_model()),
        fn_metadata=metadata,
        is_async=True,
        context_kwarg=CONTEXT_PARAMETER,
        annotations=annotations,
    )


def describe_tools(tools: list[Tool], prompts: PromptBook) -> None:
    """Put the descriptions from prompts/ on every tool and argument (all, or fail; an
    argument's empty text is listed on purpose and shows no description)."""
    by_name = {tool.name: tool for tool in tools}
    unknown = sorted(set(prompts.tools) - set(by_name))
    if unknown:
        raise ConfigError(f"{prompts.directory}: descriptions for unknown tool(s) {unknown}")
    for name, tool in sorted(by_name.items()):
        text = prompts.tools.get(name)
        if text is None:
            raise ConfigError(f"{prompts.directory}: tool {name!r} has no description")
        properties: dict[str, Any] = tool.parameters.get("properties", {})
        missing = sorted(set(properties) - set(text.arguments))
        extra = sorted(set(text.arguments) - set(properties))
        if missing or extra:
            raise ConfigError(
                f"{prompts.directory}: tool {name!r}: arguments without a description {missing}, "
                f"descriptions of unknown arguments {extra}"
            )
        tool.description = text.description
        for argument, given in text.arguments.items():
            if given:
                properties[argument]["description"] = given
            else:  # described as nothing: its name, type and limits say it all
                properties[argument].pop("description", None)
