"""Should a failure's fingerprint be computed from its salient error line? Measured on real runs.

Replays 250 agent runs (real SWE-bench trajectories with each command's output, the same
gzipped JSON-lines file as ``replay_trajectories.py`` reads, ``--data``) through the host hook's
own plan (``hooks/plan.py``): a read-only command is not recorded, a failing command becomes
``record_failure`` with the tail of its output as the message, a successful one ends a run
of identical errors. Each failure is fingerprinted three ways:

- ``whole``: the message as recorded (the tail of the output), as before issue 14;
- ``lines``: the salient lines of the message (``rules/reading/salient.py``): the error with its
  innermost frame, test ids and further errors;
- ``salient``: the salient error alone, as ``rules/reading/fingerprint.py`` reads it now.

For each it counts, run by run, the records (distinct fingerprints), the repeats (a failure
with the same fingerprint as the failure before it, no success between) and the
escalations the default threshold (3 in a row) would raise. A repeat one scheme finds and
another does not is a *merge*; every merge is printed (``--show``) with both outputs'
salient lines, so each can be judged by eye: the same error printed with different noise,
or two different errors mapped together (a false merge).

    python benchmarks/measure_fingerprints.py [--data PATH] [--show lines|salient]
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from mcp_server_escalation.datafiles import pattern_book
from mcp_server_escalation.hooks.events import HookEvent
from mcp_server_escalation.hooks.plan import Rules, plan_post
from mcp_server_escalation.rules.reading.classify import classify
from mcp_server_escalation.rules.reading.commands import DEFAULT_TEST_COMMAND
from mcp_server_escalation.rules.reading.fingerprint import fingerprint, fingerprinted_text, normalise_message
from mcp_server_escalation.rules.reading.salient import find

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "trajectories-dev.jsonl.gz"
THRESHOLD = 3


class Failure(NamedTuple):
    """One recorded failure of a run: where it is and what it said."""

    run: str
    step: int
    command: str
    message: str
    signal_type: str
    error_code: str | None


class Event(NamedTuple):
    """A run's recorded event: a failure, or a success that ends a run of identical errors."""

    failure: Failure | None


SCHEMES: dict[str, Callable[[str], str]] = {
    "whole": lambda message: message,
    "lines": lambda message: "\n".join(find(message).lines),
    "salient": fingerprinted_text,
}


def runs(path: Path) -> Iterator[dict[str, Any]]:
    """The runs of the data file, one dict each."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            yield json.loads(line)


def events(run: dict[str, Any]) -> Iterator[Event]:
    """What the host hook records of a run's steps, in order."""
    rules = Rules(test_command=DEFAULT_TEST_COMMAND)
    for number, step in enumerate(run["steps"]):
        code = step["returncode"]
        if code is None and not step.get("timed_out"):
            continue  # the final submission: no command of the agent's work
        event = HookEvent(
            host="claude-code",
            name="PostToolUse",
            kind="post_tool" if code == 0 else "post_tool_failure",
            tool_name="Bash",
            command=step["command"],
            output=step["output"],
            exit_code=code,
            failure_type="timeout" if step.get("timed_out") else None,
        )
        plan = plan_post(event, "shell", "/testbed", rules)
        if plan.failure is not None:
            f = plan.failure
            signal = f.signal_type or classify(f.message, pattern_book(), tool_name=f.tool_name).signal_type
            yield Event(Failure(run["instance_id"], number, step["command"], f.message, signal, f.error_code))
        elif plan.progress is not None and plan.progress.outcome == "success":
            yield Event(None)


def print_of(failure: Failure, scheme: str) -> tuple[str, ...]:
    """What the failure's fingerprint is made of under one scheme (equal parts: equal prints)."""
    text = SCHEMES[scheme](failure.message)
    return (failure.signal_type, failure.error_code or "", normalise_message(text))


class Tally(NamedTuple):
    """One scheme's counts over all runs, and its repeats as (earlier, later) failure pairs."""

    records: int
    repeats: int
    escalations: int
    pairs: frozenset[tuple[Failure, Failure]]


def tally(recorded: list[list[Event]], scheme: str) -> Tally:
    """Replay every run's events through the same-error counter of the ``repeated_error`` trigger."""
    records = repeats = escalations = 0
    pairs: set[tuple[Failure, Failure]] = set()
    for run_events in recorded:
        seen: set[tuple[str, ...]] = set()
        last: tuple[tuple[str, ...], Failure] | None = None
        count = 0
        for event in run_events:
            if event.failure is None:
                last, count = None, 0
                continue
            print_ = print_of(event.failure, scheme)
            seen.add(print_)
            if last is not None and last[0] == print_:
                count += 1
                repeats += 1
                pairs.add((last[1], event.failure))
            else:
                count = 1
            escalations += count == THRESHOLD
            last = (print_, event.failure)
        records += len(seen)
    return Tally(records, repeats, escalations, frozenset(pairs))


def tally_shipped(recorded: list[list[Event]]) -> int:
    """Repeats counted with the shipped ``fingerprint()``: proof that ``salient`` measures it."""
    repeats = 0
    for run_events in recorded:
        last = None
        for event in run_events:
            f = event.failure
            if f is None:
                last = None
                continue
            print_ = fingerprint(
                signal_type=f.signal_type,
                step="main",
                message=f.message,
                tool_name="Bash",
                error_code=f.error_code,
            )
            repeats += print_ == last
            last = print_
    return repeats


def _show(pair: tuple[Failure, Failure]) -> None:
    earlier, later = pair
    print(f"--- {earlier.run} steps {earlier.step} -> {later.step}")
    for failure in pair:
        print(f"  $ {failure.command.splitlines()[0][:100] if failure.command else ''}")
        for line in find(failure.message).lines[:3]:
            print(f"      {line[:160]}")


def main() -> None:
    """Print the table (and, with ``--show``, every merge of one scheme)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--show", choices=["lines", "salient"])
    args = parser.parse_args()
    recorded = [list(events(run)) for run in runs(args.data)]
    failures = sum(1 for run_events in recorded for e in run_events if e.failure is not None)
    print(f"{len(recorded)} runs, {failures} recorded failures, threshold {THRESHOLD} in a row\n")
    tallies = {scheme: tally(recorded, scheme) for scheme in SCHEMES}
    whole = tallies["whole"]
    print(f"{'scheme':<10} {'records':>8} {'repeats':>8} {'escalations':>12} {'merges':>7} {'splits':>7}")
    for scheme, t in tallies.items():
        merges, splits = len(t.pairs - whole.pairs), len(whole.pairs - t.pairs)
        print(f"{scheme:<10} {t.records:>8} {t.repeats:>8} {t.escalations:>12} {merges:>7} {splits:>7}")
    shipped = tally_shipped(recorded)
    print(f"\nrules.reading.fingerprint.fingerprint() itself: {shipped} repeats (the salient scheme's count)")
    if args.show:
        for pair in sorted(tallies[args.show].pairs - whole.pairs, key=lambda p: (p[0].run, p[0].step)):
            _show(pair)


if __name__ == "__main__":
    main()
