"""``hook claude-code --wake-minutes N``: Claude Code's ``asyncRewake`` Stop hook, which
wakes an idle agent with the operator's answer (``hooks/wake.py``).

Unlike every other hook run it may exit 2: that is how Claude Code is told to wake the model
with what the hook wrote on stderr, and it is given only for an answer. Whatever goes wrong
is one line on stderr and exit 0, as for any hook run.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from ..settings import Settings

if TYPE_CHECKING:
    from ..hooks.triage import Triaged

# The longest wait the option takes: a day.
WAKE_MINUTES_MAX = 1440


def add_wake_option(parser: argparse.ArgumentParser) -> None:
    """``--wake-minutes N`` of ``hook claude-code``."""
    parser.add_argument(
        "--wake-minutes",
        type=wake_minutes,
        metavar="N",
        help="as Claude Code's asyncRewake Stop hook: when the turn ended while an escalation "
        "waits, wait up to N minutes for the answer and wake the model with it (exit 2, the "
        "answer on stderr) (default: an ordinary hook run)",
    )


def wake_minutes(given: str) -> float:
    """``--wake-minutes``: a number of minutes above 0, at most a day."""
    try:
        minutes = float(given)
    except ValueError:
        minutes = 0.0
    if not 0 < minutes <= WAKE_MINUTES_MAX:
        raise argparse.ArgumentTypeError(
            f"{given!r} is not a number of minutes above 0 and at most {WAKE_MINUTES_MAX}"
        )
    return minutes


def run_wake(entry: str, args: argparse.Namespace) -> int:
    """``hook claude-code --wake-minutes N``: exit 2 with the operator's answer on stderr
    once it is given (Claude Code then wakes the model with it), else exit 0 (``hooks/wake.py``).
    Whatever goes wrong is one line on stderr and exit 0, as for any hook run: the session
    stays as it was."""
    from ..hooks.outcome import failed  # noqa: PLC0415
    from .hook import answer_for, say  # noqa: PLC0415 (hook imports this module)

    try:
        words = _wake_words(entry, args)
    except Exception as exc:  # noqa: BLE001 (the top level of a hook: a bug must never wake the model)
        say(answer_for(args, failed(exc)))
        return 0
    if not words:
        return 0
    sys.stderr.write(words + "\n")
    return 2


def _wake_words(entry: str, args: argparse.Namespace) -> str | None:
    from ..hooks.dispatch import MAX_INPUT_BYTES, HookInputError, prepare  # noqa: PLC0415
    from ..hooks.outcome import failed  # noqa: PLC0415
    from .hook import answer_for, say  # noqa: PLC0415

    settings = Settings.from_sources(db=args.db, config=args.config, prompts=args.prompts)
    try:
        triaged = prepare(sys.stdin.buffer.read(MAX_INPUT_BYTES + 1), settings, os.environ, entry=entry)
    except HookInputError as exc:
        say(answer_for(args, failed(exc), settings))
        return None
    if triaged is None or triaged.event.kind != "stop":
        return None
    import anyio  # noqa: PLC0415

    return anyio.run(_wake, settings, triaged, float(args.wake_minutes))


async def _wake(settings: Settings, triaged: Triaged, minutes: float) -> str | None:
    from ..hooks.wake import wait_for_answer  # noqa: PLC0415
    from ..services.runtime import open_runtime  # noqa: PLC0415

    async with open_runtime(settings, bounded=True) as rt:
        return await wait_for_answer(rt, triaged, settings.hooks, minutes)
