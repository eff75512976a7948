"""The command lines of ``escalations watch``, ``stats``, ``db backup`` and ``db check`` (argparse only).

Kept apart from their implementation (``monitor``) so that building the parser, which every
run of the console script does (the MCP server included), loads nothing else.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

AddCommon = Callable[[argparse.ArgumentParser], None]
JSON_HELP = "print the full records as JSON, for scripts (default: text that fits the terminal)"


def add_watch_parser(escalation_commands: Any, common: AddCommon) -> None:
    """``escalations watch``."""
    watch = escalation_commands.add_parser(
        "watch", help="print each new or changed escalation as it happens (any process), until Ctrl-C"
    )
    common(watch)
    watch.add_argument("--task", metavar="TASK_ID", help="only this task's escalations (default: every task)")
    watch.add_argument("--json", action="store_true", help="one JSON object per line (default: text)")
    watch.add_argument(
        "--once", action="store_true", help="exit after the first change (default: keep watching)"
    )
    watch.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="exit after this long (default: until Ctrl-C)"
    )


def add_stats_parser(commands: Any, common: AddCommon) -> None:
    """``stats``."""
    stats = commands.add_parser(
        "stats", help="escalations by type and status, answer times, answered within an hour, notifiers"
    )
    common(stats)
    stats.add_argument("--json", action="store_true", help=JSON_HELP)


def add_backup_parser(db_commands: Any, common: AddCommon) -> None:
    """``db backup PATH``."""
    backup = db_commands.add_parser("backup", help="an online, consistent copy of the store")
    common(backup)
    backup.add_argument("path", metavar="PATH", help="the file to write the copy to")
    backup.add_argument("--force", action="store_true", help="replace PATH if it exists (default: refuse)")
    backup.add_argument("--json", action="store_true", help=JSON_HELP)


def add_check_parser(db_commands: Any, common: AddCommon) -> None:
    """``db check [--repair]``."""
    check = db_commands.add_parser(
        "check", help="integrity of the store file and of its search index; --repair rebuilds the index"
    )
    common(check)
    check.add_argument(
        "--repair",
        action="store_true",
        help="rebuild a damaged search index from the failure records (default: only report)",
    )
    check.add_argument("--json", action="store_true", help=JSON_HELP)


def add_copy_parser(db_commands: Any, common: AddCommon) -> None:
    """``db copy SOURCE TARGET``."""
    copy = db_commands.add_parser(
        "copy",
        help="copy every row of a store into an empty one: a SQLite file into PostgreSQL, or back",
    )
    common(copy)
    copy.add_argument(
        "source", metavar="SOURCE", help="the store to copy: a file's path or a postgresql:// URL"
    )
    copy.add_argument("target", metavar="TARGET", help="an empty store to copy into: a path or a URL")
    copy.add_argument("--json", action="store_true", help=JSON_HELP)
