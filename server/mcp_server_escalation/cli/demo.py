"""``demo``: the whole escalation loop in one command, against the real server.

A newcomer who starts a stdio server by hand sees it wait on stdin and learns nothing. The
demo plays the three parts instead, each the way it runs in practice:

- the **server** is the installed console script, started as a stdio subprocess on a
  throw-away store (a temp folder removed at the end unless ``--keep``; or ``--db PATH``);
- the **agent** is the real SDK ``Client`` over that pipe, in ``mode="legacy"`` (the
  initialize handshake that agent hosts such as Claude Code use today);
- the **operator** is the same console script run as another process on the same store
  (``escalations show`` and ``escalations respond``), i.e. the CLI code path a human uses.

The story, and why it runs in this order. A blocking escalation pauses the task, and a
paused task's ``check_edit`` refuses every path for that reason alone, so the out-of-scope
refusal comes *after* the first answer is acknowledged, where it is refused for its scope
and opens a second escalation of its own:

1. ``start_task`` with a scope, a baseline pass rate and a test stall at 3 runs (the default
   is 5); ``check_edit`` of an in-scope file.
2. Three attempts, each reported the way the README tells an agent to (``record_failure``
   after the error, then ``report_progress`` with the test counts): the same ``TypeError``
   at three lines, and test runs that never beat the baseline. The third error fires
   ``repeated_error`` and pauses the task; the third stalled run fires ``test_stall``, which
   joins that open escalation instead of opening another.
3. The operator reads the escalation (``escalations show``) and answers it with guidance
   (``escalations respond``) while the agent waits in ``get_escalation(wait_seconds=...)``;
   the agent receives the answer and acknowledges it, and the task is active again.
4. ``check_edit`` of a path outside the scope is refused: a ``scope_deviation`` escalation,
   left pending for the reader to answer (with ``--keep``).
5. A fresh server process (a new agent session) renders ``get_feedback``.

Every step checks the server's answer; anything unexpected stops the demo with exit code 1
and the step's name, so the demo doubles as a smoke test of an installation.

Wording: the narration below is terminal output for a human (like the operator CLI's), so it
lives here, in the one ``STEPS`` table. Everything the *model* reads (directives, messages,
trigger summaries, the rendered feedback) comes from the server, i.e. from ``prompts/``; the
demo prints it verbatim. The error texts and the operator's guidance are the demo's script
data (what an agent and a human would type), also kept at the top of this module.

The store the demo uses is its own: ``ESCALATION_DB``, ``ESCALATION_CONFIG`` and
``ESCALATION_PROMPTS`` from the environment are not passed on, and neither is the per-user
config file read (its processes get the empty ``os.devnull`` as ``ESCALATION_CONFIG``), so a
first run behaves the same everywhere and never notifies anyone. An explicit ``--config``
or ``--prompts`` is passed on to every process (a flag beats the variable), and the demo
then checks that configuration against its script.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from ..models.thresholds import Thresholds
from ..rules.wording.words import counted, kind_words
from .readable import INDENT, error_lines, terminal_width, wrap

# -- the script ------------------------------------------------------------------------------

# step key -> (short title used when the step fails, narration printed when it succeeds)
STEPS: dict[str, tuple[str, str]] = {
    "server": ("start the server", "server          {command} --db {db}  (stdio subprocess; {store})"),
    "start": (
        "start_task",
        "start_task      task {task_id}, scope {scope}; {baseline:.0%} of the tests passed before; "
        "stalled tests page after {threshold} runs here, {default} by default",
    ),
    "edit_in": ("check_edit in scope", "check_edit      {path}: inside the scope, allowed"),
    "error": (
        "record_failure",
        "record_failure  {error} at {path}:{line} ({count} in a row; escalates at {threshold})",
    ),
    "error_escalates": (
        "record_failure escalates",
        "record_failure  the same error at {path}:{line}, {count} in a row -> escalation {id} "
        "({type}), task {status}",
    ),
    "run": (
        "report_progress",
        "report_progress tests {passed}/{total} = {rate:.0%}, not above {best:.0%} "
        "({count} of {threshold} runs without improvement)",
    ),
    "run_joins": (
        "report_progress joins the escalation",
        "report_progress tests {passed}/{total} = {rate:.0%}, {count} runs without improvement -> "
        "{trigger} joins escalation {id} (triggers: {triggers})",
    ),
    "operator_show": (
        "operator: escalations show",
        "operator        $ mcp-server-escalation escalations show {id}   (another process)",
    ),
    "operator_answer": (
        "operator: escalations respond",
        "operator        $ mcp-server-escalation escalations respond {id} --guidance ...  -> {cli}",
    ),
    "receive": (
        "get_escalation receives the answer",
        "get_escalation  waited {waited:.1f} s in get_escalation({id}, wait_seconds={wait}): "
        "{response_type} from {responder}",
    ),
    "acknowledge": (
        "acknowledge_response",
        "acknowledge     escalation {id} is {escalation_status}; task {status} again",
    ),
    "edit_out": (
        "check_edit out of scope",
        "check_edit      {path}: refused ({reason}) -> escalation {id} ({type}), task {status}",
    ),
    "feedback": (
        "get_feedback from a fresh process",
        "get_feedback    a fresh server process, a new agent session: what it reads first",
    ),
}

TITLE = "Fix the adder"
SPECIFICATION = "add() must accept numeric strings from parse_amount() and return a number."
SCOPE = "src/calc/**"
BASELINE = 0.8
IN_SCOPE = "src/calc/adder.py"
OUT_OF_SCOPE = "src/payments/ledger.py"
ERROR = "TypeError: unsupported operand type(s) for +: 'int' and 'str'"
# (line of the error, what the agent tried, tests passed, tests failed) per attempt
ATTEMPTS = (
    (12, "wrapped b in int() inside add()", 8, 2),
    (19, "converted both operands with str() before adding", 7, 3),
    (27, "added an isinstance() check before the sum", 8, 2),
)
GUIDANCE = "The str comes from parse_amount(); convert there and leave add() numeric."
# The same error pages at its default, 3; stalled tests page at 5 by default, which this short
# story lowers to 3 for its task and says so when the task starts.
THRESHOLD = 3
WAIT_SECONDS = 30  # how long the agent waits in get_escalation for the operator
STEP_SECONDS = 45  # no step of the demo may take longer
TOTAL_SECONDS = 120  # the whole demo, server start-up included
SERVER = "mcp-server-escalation"
AGENT = "demo-agent"
# The store belongs to the demo, never to whatever the environment points at.
STORE_ENV = ("ESCALATION_DB", "ESCALATION_CONFIG", "ESCALATION_PROMPTS")
# An empty config instead of the per-user file (module docstring).
NO_CONFIG = {"ESCALATION_CONFIG": os.devnull}


# The closing lines: where the store is, and how to add the server to an agent host.
HEADER = "mcp-server-escalation demo: a scripted agent, the real server, an operator in another process"
STORE_KEPT = "The store is kept at {db}. Look around, or answer escalation {id} yourself:"
STORE_KEPT_COMMANDS = (
    "  {command} --db {db} escalations list --status all",
    "  {command} --db {db} tasks show {task_id}",
    "  {command} --db {db} escalations respond {id} --approve",
)
STORE_REMOVED = "The throw-away store was removed (run `demo --keep` to look at it afterwards)."
CLAUDE_CODE = "Add the server to Claude Code (all agents then share the default store):"
FINISHED = "Demo finished in {seconds:.1f} s: every step got the answer it expected."
FAILED = "demo step {number} ({title}) failed: {problem}"
LOG_TAIL = "the server's stderr, last {count} lines:"
LOG_LINES = 25
NEEDS_FILE = "the demo needs a store file that the server and the operator CLI share, not :memory:"


# -- plumbing --------------------------------------------------------------------------------


class StepFailed(Exception):
    """The server (or the operator CLI) answered something the script did not expect."""


# The narration's columns: "NN. " and a 16-character step name, then what happened; what the
# agent was told and what the operator saw go under it, behind these prefixes.
TEXT_COLUMN = 20
TOLD = "    agent <- "
BLOCK = "    | "


def _out(text: str = "") -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _wrapped(text: str, first: str = "", rest: str = INDENT) -> None:
    """``text`` wrapped to the terminal (80 columns in a pipe); an id or a path stays whole."""
    for line in wrap(text, terminal_width(), first, rest, whole_words=True):
        _out(line)


def _error(text: str) -> None:
    sys.stderr.write("".join(f"{line}\n" for line in error_lines(text, terminal_width())))


def _expect(condition: bool, problem: str) -> None:
    if not condition:
        raise StepFailed(problem)


def server_command() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m``."""
    bin_dir = Path(sys.executable).parent
    for name in (SERVER, f"{SERVER}.exe"):
        if (bin_dir / name).is_file():
            return [str(bin_dir / name)]
    return [sys.executable, "-m", "mcp_server_escalation"]


class Agent:
    """The SDK client as an agent uses it: a tool call gives its structured result."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """The structured result; a tool error is a failed step."""
        result = await self.client.call_tool(tool, arguments)
        text = " ".join(str(getattr(block, "text", "")) for block in result.content)
        if result.is_error:
            raise StepFailed(f"{tool} returned a tool error: {text}")
        if result.structured_content is None:
            raise StepFailed(f"{tool} returned no structured content: {text}")
        return dict(result.structured_content)


@dataclass
class Demo:
    """One run of the script; remembers the step in progress for the failure message."""

    db_path: str
    store_label: str
    extra_args: list[str]
    server_log: TextIO
    done: int = 0
    current: str = "server"
    task_id: str = ""
    repeated: int = 0  # the repeated_error escalation
    open_escalation: int = 0  # the scope_deviation escalation, left pending

    # -- output and bookkeeping

    def _say(self, key: str, **fields: Any) -> None:
        self.done += 1
        if isinstance(fields.get("type"), str):
            fields["type"] = kind_words(fields["type"])
        _wrapped(f"{self.done:>2}. {STEPS[key][1].format(**fields)}", rest=" " * TEXT_COLUMN)

    @staticmethod
    def _directive(result: dict[str, Any]) -> None:
        _wrapped(f"{result['directive']}: {result['message']}", TOLD, " " * len(TOLD))

    @staticmethod
    def _block(text: str) -> None:
        """Lines another part printed, each behind the bar; a longer one continues under it."""
        for line in text.rstrip("\n").splitlines():
            lead = line[: len(line) - len(line.lstrip())]
            if not line.strip():
                _out(BLOCK.rstrip())
                continue
            _wrapped(line.strip(), BLOCK + lead, BLOCK + lead + INDENT)

    @contextmanager
    def step(self, key: str) -> Iterator[None]:
        """Bound one step in time; remember it, so that a failure can name it."""
        self.current = key
        with anyio.fail_after(STEP_SECONDS):
            yield

    def failure(self, problem: str) -> str:
        """The one-line report of the step in progress."""
        return FAILED.format(number=self.done + 1, title=STEPS[self.current][0], problem=problem)

    # -- the three parts

    @asynccontextmanager
    async def agent(self) -> AsyncIterator[Agent]:
        """The console script as a stdio subprocess, connected the way an agent host does."""
        command = server_command()
        # The SDK gives the server a minimal environment (as hosts do); PYTHONPATH is passed on
        # so that the ``python -m`` fallback imports the same package this demo runs from.
        path = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
        params = StdioServerParameters(
            command=command[0],
            args=[*command[1:], "--db", self.db_path, *self.extra_args],
            env={**path, **NO_CONFIG},
        )
        # The server logs to stderr: into a file, out of the demo's output (shown on failure).
        transport = stdio_client(params, errlog=self.server_log)
        async with Client(transport, mode="legacy", read_timeout_seconds=STEP_SECONDS) as client:
            yield Agent(client)

    async def operator(self, *args: str) -> str:
        """The operator CLI as another process on the same store; its stdout."""
        env = {**{k: v for k, v in os.environ.items() if k not in STORE_ENV}, **NO_CONFIG}
        # What the operator's command prints is shown behind the bar: it is laid out to fit there.
        env["COLUMNS"] = str(terminal_width() - len(BLOCK))
        command = [*server_command(), "--db", self.db_path, *self.extra_args, *args]
        done = await anyio.run_process(command, check=False, env=env)
        if done.returncode != 0:
            raise StepFailed(
                f"`{' '.join(args[:2])}` exited {done.returncode}: {done.stderr.decode().strip()}"
            )
        return done.stdout.decode()

    # -- the story

    async def run(self) -> None:
        """Play the script; every step checks what the server answered."""
        _wrapped(HEADER)
        _out()
        with anyio.fail_after(TOTAL_SECONDS):
            async with self.agent() as agent:
                self._say(
                    "server", command=" ".join(server_command()), db=self.db_path, store=self.store_label
                )
                await self._start(agent)
                for attempt in range(1, THRESHOLD + 1):
                    await self._attempt(agent, attempt)
                escalation_id = await self._show()
                await self._answer(agent, escalation_id)
                await self._refuse(agent)
            await self._feedback()

    async def _start(self, agent: Agent) -> None:
        with self.step("start"):
            started = await agent.call(
                "start_task",
                title=TITLE,
                specification=SPECIFICATION,
                scope=[SCOPE],
                task_id=f"demo-{os.urandom(3).hex()}",  # a reused --db store gets a new task
                agent_id=AGENT,
                baseline_pass_rate=BASELINE,
                thresholds={"no_test_improvement_after": THRESHOLD},
            )
            _expect(
                started["status"] == "active" and started["directive"] == "proceed",
                f"expected an active task and proceed, got {started['status']}, {started['directive']}",
            )
            self.task_id = str(started["task_id"])
            self._say(
                "start",
                task_id=self.task_id,
                scope=SCOPE,
                baseline=BASELINE,
                threshold=THRESHOLD,
                default=Thresholds().no_test_improvement_after,
            )
            self._directive(started)
        with self.step("edit_in"):
            allowed = await agent.call("check_edit", task_id=self.task_id, paths=[IN_SCOPE])
            _expect(allowed["allowed"] is True, f"{IN_SCOPE} was refused: {allowed['reasons']}")
            self._say("edit_in", path=IN_SCOPE)
            self._directive(allowed)

    async def _attempt(self, agent: Agent, count: int) -> None:
        """One attempt as the README tells an agent to report it: the error, then the run."""
        await self._error(agent, count)
        await self._test_run(agent, count)

    async def _error(self, agent: Agent, count: int) -> None:
        line, action, _, _ = ATTEMPTS[count - 1]
        last = count == THRESHOLD
        with self.step("error_escalates" if last else "error"):
            recorded = await agent.call(
                "record_failure",
                task_id=self.task_id,
                message=ERROR,
                error_type="TypeError",
                file=IN_SCOPE,
                line=line,
                attempted_action=action,
            )
            failure, escalation = recorded["failure"], recorded["escalation"]
            _expect(
                failure["consecutive_count"] == count and failure["occurrence_count"] == count,
                f"expected the error {counted(count, 'time', 'times')} in a row, the server counted "
                f"{failure['consecutive_count']} in a row and {failure['occurrence_count']} in all",
            )
            if last:
                await self._escalated(agent, recorded, line, count)
            else:
                _expect(escalation is None, f"escalated too early: {_named(escalation)}")
                self._say(
                    "error",
                    error=ERROR.split(":", maxsplit=1)[0],
                    path=IN_SCOPE,
                    line=line,
                    count=count,
                    threshold=THRESHOLD,
                )
            self._directive(recorded)

    async def _escalated(self, agent: Agent, recorded: dict[str, Any], line: int, count: int) -> None:
        """The error's last repeat: a repeated_error escalation, and the task paused."""
        escalation = recorded["escalation"]
        _expect(
            escalation is not None and escalation["type"] == "repeated_error",
            f"expected a repeated_error escalation, got {escalation and escalation['type']}",
        )
        _expect(recorded["directive"] == "pause", f"expected pause, got {recorded['directive']}")
        self.repeated = int(escalation["escalation_id"])
        status = await self._status(agent)
        self._say(
            "error_escalates",
            path=IN_SCOPE,
            line=line,
            count=count,
            id=escalation["escalation_id"],
            type=escalation["type"],
            status=status,
        )

    async def _test_run(self, agent: Agent, count: int) -> None:
        _, action, passed, failed = ATTEMPTS[count - 1]
        last = count == THRESHOLD
        with self.step("run_joins" if last else "run"):
            ran = await agent.call(
                "report_progress",
                task_id=self.task_id,
                files_modified=[IN_SCOPE],
                tests_passed=passed,
                tests_failed=failed,
                outcome="failure",
                note=action,
            )
            stalled = ran["counters"]["test_runs_without_improvement"]
            _expect(
                stalled == count,
                f"expected {counted(count, 'run', 'runs')} without improvement, got {stalled}",
            )
            total = passed + failed
            measured = {"passed": passed, "total": total, "rate": passed / total, "count": stalled}
            joined = ran["escalation"]
            if last:
                self._joined(joined, measured)
            else:
                _expect(joined is None, f"escalated too early: {_named(joined)}")
                self._say("run", best=BASELINE, threshold=THRESHOLD, **measured)
            self._directive(ran)

    def _joined(self, joined: Any, measured: dict[str, Any]) -> None:
        """The last run: test_stall joins the open repeated_error escalation."""
        types = [t["type"] for t in (joined or {}).get("triggers", [])]
        _expect(
            joined is not None
            and joined["escalation_id"] == self.repeated
            and types == ["repeated_error", "test_stall"],
            f"expected test_stall to join escalation {self.repeated}, "
            f"got {joined['escalation_id'] if joined else 'no escalation'} with triggers "
            f"{', '.join(kind_words(t) for t in types) or 'none'}",
        )
        self._say(
            "run_joins",
            trigger=kind_words("test_stall"),
            id=joined["escalation_id"],
            triggers=" and ".join(kind_words(t) for t in types),
            **measured,
        )

    async def _status(self, agent: Agent) -> str:
        view = await agent.call("get_task", task_id=self.task_id)
        return str(view["task"]["status"])

    async def _show(self) -> int:
        with self.step("operator_show"):
            escalation_id = self.repeated
            shown = await self.operator("escalations", "show", str(escalation_id))
            # Loose on purpose: the check is that another process sees it, not the view's layout.
            _expect(
                all(
                    word in shown
                    for word in (f"Escalation {escalation_id}", "pending", "repeated error", "test stall")
                ),
                f"the operator's view is not the pending escalation with both triggers:\n{shown}",
            )
            self._say("operator_show", id=escalation_id)
            self._block(shown)
        return escalation_id

    async def _answer(self, agent: Agent, escalation_id: int) -> None:
        received: dict[str, Any] = {}

        async def wait() -> None:
            began = time.monotonic()
            received.update(
                await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=WAIT_SECONDS)
            )
            received["waited"] = time.monotonic() - began

        with self.step("operator_answer"):
            # The agent waits as it was told to while the operator answers from another process.
            async with anyio.create_task_group() as tg:
                tg.start_soon(wait)
                answered = await self.operator(
                    "escalations",
                    "respond",
                    str(escalation_id),
                    "--guidance",
                    GUIDANCE,
                )
            # The CLI exited 0; what it wrote is checked where it matters, in the agent's hands.
            self._say("operator_answer", id=escalation_id, cli=" ".join(answered.split()))
        self._receive(escalation_id, received)
        await self._acknowledge(agent, escalation_id)

    def _receive(self, escalation_id: int, received: dict[str, Any]) -> None:
        with self.step("receive"):
            got = received["escalation"]
            response = got["response"] or {}
            _expect(
                got["status"] == "resolved" and response.get("content") == GUIDANCE and got["delivered_at"],
                f"the agent did not receive the guidance: status {got['status']}, answer "
                f"{response.get('response_type') or 'none'}: {response.get('content') or '(no text)'}",
            )
            _expect(
                received["directive"] == "pause",
                f"expected pause until acknowledged, got {received['directive']}",
            )
            self._say(
                "receive",
                id=escalation_id,
                wait=WAIT_SECONDS,
                waited=received["waited"],
                response_type=response["response_type"],
                responder=response["responder"],
            )
            self._directive(received)

    async def _acknowledge(self, agent: Agent, escalation_id: int) -> None:
        with self.step("acknowledge"):
            acked = await agent.call("acknowledge_response", escalation_id=escalation_id)
            _expect(
                acked["task_status"] == "active"
                and acked["directive"] == "proceed"
                and acked["escalation"]["acknowledged_at"] is not None,
                f"expected an active task and proceed, got {acked['task_status']}, {acked['directive']}",
            )
            self._say(
                "acknowledge",
                id=escalation_id,
                escalation_status=acked["escalation"]["status"],
                status=acked["task_status"],
            )
            self._directive(acked)

    async def _refuse(self, agent: Agent) -> None:
        with self.step("edit_out"):
            refused = await agent.call("check_edit", task_id=self.task_id, paths=[OUT_OF_SCOPE])
            escalation = refused["escalation"]
            _expect(
                refused["allowed"] is False
                and refused["directive"] == "pause"
                and escalation is not None
                and escalation["type"] == "scope_deviation",
                f"expected a scope_deviation refusal and pause, got allowed={refused['allowed']}, "
                f"escalation {escalation and escalation['type']}, {refused['directive']}",
            )
            self.open_escalation = int(escalation["escalation_id"])
            self._say(
                "edit_out",
                path=OUT_OF_SCOPE,
                reason=str(refused["paths"][0]["reason"]).rstrip("."),
                id=self.open_escalation,
                type=escalation["type"],
                status=await self._status(agent),
            )
            self._directive(refused)

    async def _feedback(self) -> None:
        with self.step("feedback"):
            async with self.agent() as fresh:
                feedback = await fresh.call("get_feedback", task_id=self.task_id)
            _expect(
                GUIDANCE in feedback["rendered"] and len(feedback["human_responses"]) == 1,
                f"the feedback does not carry the operator's answer: {feedback['rendered']!r}",
            )
            self._say("feedback")
            self._block(feedback["rendered"])


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _named(escalation: dict[str, Any] | None) -> str:
    """An escalation a check did not expect, as a person reads it."""
    if escalation is None:
        return "no escalation"
    return f"escalation {escalation['escalation_id']} ({kind_words(str(escalation['type']))})"


def _problem(exc: BaseException) -> str:
    """The most telling cause of a failure: a failed check, else the first real error."""
    leaves = _leaves(exc)
    chosen = next((e for e in leaves if isinstance(e, StepFailed)), leaves[0])
    if isinstance(chosen, StepFailed):
        return str(chosen)
    if isinstance(chosen, TimeoutError):
        return f"timed out (a step may take {STEP_SECONDS} s, the whole demo {TOTAL_SECONDS} s)"
    return f"{type(chosen).__name__}: {chosen}"


def _closing(demo: Demo, kept: bool, seconds: float) -> None:
    command = " ".join(server_command())
    _out()
    if kept:
        _wrapped(STORE_KEPT.format(db=demo.db_path, id=demo.open_escalation))
        for line in STORE_KEPT_COMMANDS:
            text = line.format(
                command=command, db=demo.db_path, id=demo.open_escalation, task_id=demo.task_id
            )
            _wrapped(text.strip(), INDENT, INDENT * 3)
    else:
        _wrapped(STORE_REMOVED)
    _out()
    _wrapped(CLAUDE_CODE)
    _wrapped(f"claude mcp add escalation -- {command}", INDENT, INDENT * 3)
    _out("  or in .mcp.json:")
    first, *rest = server_command()
    config = {"mcpServers": {"escalation": {"command": first, "args": rest}}}
    # Text to paste into a file: JSON by nature, one short line per key.
    for line in json.dumps(config, indent=2).splitlines():
        _out(INDENT + line)
    _out()
    _wrapped(FINISHED.format(seconds=seconds))


def run(args: argparse.Namespace) -> int:
    """Play the demo: 0 when every step got what it expected, else 1 naming the failed step."""
    if args.db == ":memory:":
        _error(NEEDS_FILE)
        return 2
    workdir = None if args.db else tempfile.mkdtemp(prefix="mcp-escalation-demo-")
    # Absolute, so the closing commands work from any directory.
    db_path = str(
        Path(args.db).expanduser().absolute() if args.db else Path(workdir or "") / "escalations.db"
    )
    label = (
        "your --db store"
        if args.db
        else ("a temp store, kept" if args.keep else "a temp store, removed at the end")
    )
    extra = [
        *(["--config", args.config] if args.config else []),
        *(["--prompts", args.prompts] if args.prompts else []),
    ]
    began = time.monotonic()
    with tempfile.TemporaryFile("w+", encoding="utf-8") as server_log:
        demo = Demo(db_path=db_path, store_label=label, extra_args=extra, server_log=server_log)
        try:
            anyio.run(demo.run)
        # The top level of the demo: any failure, foreseen or not, must name its step, because
        # the demo doubles as a smoke test of an installation.
        except Exception as exc:  # noqa: BLE001
            if any(isinstance(leaf, BrokenPipeError) for leaf in _leaves(exc)):
                raise BrokenPipeError from None  # the reader left (| head): no failure of the demo
            _error(demo.failure(_problem(exc)))
            server_log.seek(0)
            logged = server_log.read().splitlines()[-LOG_LINES:]
            if logged:
                sys.stderr.write(LOG_TAIL.format(count=len(logged)) + "\n")
            for line in logged:
                sys.stderr.write(f"server: {line}\n")
            return 1
        finally:
            if workdir is not None and not args.keep:
                shutil.rmtree(workdir, ignore_errors=True)
    _closing(demo, kept=bool(args.db or args.keep), seconds=time.monotonic() - began)
    return 0
