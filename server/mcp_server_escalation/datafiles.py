"""Locating and loading the data files that ship with the package.

The prompts and schemas live at the top of the repository; the wheel carries them under
``_data/``. This module finds them in either place, so a source checkout and an installed
copy behave the same from any working directory.
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from pathlib import Path

from pydantic import ValidationError

from .errors import ConfigError
from .models.reports import ReplayFigure
from .rules.reading.classify import Extractor, Pattern, PatternBook

_PACKAGE_DIR = Path(__file__).resolve().parent


@cache
def data_dir(name: str) -> Path:
    """The packaged ``prompts`` or ``schemas`` folder (installed wheel or source checkout)."""
    installed = _PACKAGE_DIR / "_data" / name
    if installed.is_dir():
        return installed
    checkout = _PACKAGE_DIR.parent.parent / name
    if checkout.is_dir():
        return checkout
    raise ConfigError(f"the packaged {name}/ folder is missing (looked in {installed} and {checkout})")


@cache
def pattern_book() -> PatternBook:
    """The failure classification patterns, compiled once per process."""
    path = _PACKAGE_DIR / "data" / "failure_patterns.toml"
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        patterns = tuple(
            Pattern.compile(p["name"], p["signal_type"], p["regex"], p["example"]) for p in raw["pattern"]
        )
        extractors = tuple(
            Extractor(e["signal_type"], re.compile(e["regex"], re.IGNORECASE))
            for e in raw.get("extractor", [])
        )
    except (OSError, KeyError, TypeError, re.error, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    return PatternBook(patterns, extractors)


@cache
def replay_figures() -> tuple[ReplayFigure, ...]:
    """The replay's precision per corpus and trigger type (``data/replay_figures.toml``, which
    ``benchmarks/replay_trajectories.py --figures`` writes); none when the file is absent."""
    path = _PACKAGE_DIR / "data" / "replay_figures.toml"
    if not path.exists():
        return ()
    try:
        return parse_replay_figures(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, ValidationError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc


def parse_replay_figures(text: str) -> tuple[ReplayFigure, ...]:
    """The figures of a ``replay_figures.toml``'s text (its ``[[figure]]`` tables)."""
    return tuple(ReplayFigure.model_validate(row) for row in tomllib.loads(text).get("figure", []))
