"""The replay's ``--sweep`` protocol (benchmarks/replay_sweep.py): which candidate config is
admissible, which is a fit, which wins, chosen with one agent left out. The figures are written
here as a corpus's worst folds would come out of the replay."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import replay_sweep as sweep  # noqa: E402
from mcp_server_escalation.settings import Settings  # noqa: E402

AGENTS = ("mini-swe-agent", "OpenHands", "SWE-agent")


def _worst(solved: float, lift: float | None, saved: float, precision_over: float = 0.2) -> dict[str, Any]:
    return {
        "worst": {
            "solved_paused": solved,
            "lift": lift,
            "precision_over_base_rate": precision_over,
            "hook_errors": 0,
            "unsolved_steps_saved": saved,
            "saved_over_cap": 0.01,
        }
    }


def _on_grid(grace: int, **by_agent: dict[str, Any]) -> sweep.Candidate:
    candidate = sweep.Candidate(
        f"hooks.repeat_grace_calls={grace}", None, {"hooks.repeat_grace_calls": grace}
    )
    fine = (0.02, 4.0, 0.05)  # admissible everywhere
    candidate.figures = {agent: by_agent.get(agent.replace("-", "_")) or _worst(*fine) for agent in AGENTS}
    return candidate


def test_a_setting_admissible_only_between_two_that_are_not_is_rejected_as_a_fit() -> None:
    too_many = _worst(0.06, 4.0, 0.20)
    grid = [
        _on_grid(0, OpenHands=too_many),
        _on_grid(10, OpenHands=_worst(0.03, 5.0, 0.30)),  # the best figures, alone in its window
        _on_grid(20, OpenHands=too_many),
        _on_grid(30, OpenHands=_worst(0.03, 3.5, 0.08)),
        _on_grid(40, OpenHands=_worst(0.01, 6.0, 0.06)),
        _on_grid(50, OpenHands=_worst(0.00, 9.0, 0.04)),
    ]
    judged = {j.candidate.point["hooks.repeat_grace_calls"]: j for j in sweep.judge(grid, AGENTS)}
    assert judged[0].missed == ["OpenHands: solved runs paused 6.0% > 4%"]
    assert not judged[10].missed
    assert judged[10].narrow == ["hooks.repeat_grace_calls=0", "hooks.repeat_grace_calls=20"]
    assert not judged[10].eligible
    assert judged[30].narrow == ["hooks.repeat_grace_calls=20"]  # one side is enough
    assert judged[40].eligible
    assert judged[50].eligible
    # The score is the worst fold of the worst corpus: 40 saves 5% on two corpora, 6% on one.
    assert judged[40].score == 0.05
    ranked = sweep.judge(grid, AGENTS)
    assert ranked[0].candidate.name == "hooks.repeat_grace_calls=40"
    words = sweep.why(ranked, AGENTS)
    assert words.startswith("hooks.repeat_grace_calls=40 wins on mini-swe-agent, OpenHands, SWE-agent")
    assert "against 4.0% for the next, hooks.repeat_grace_calls=50" in words
    assert "narrow windows (fits): hooks.repeat_grace_calls=10, hooks.repeat_grace_calls=30" in words


def test_the_short_run_agent_has_limits_of_its_own_and_every_limit_counts() -> None:
    short = _on_grid(0, SWE_agent=_worst(0.045, 2.5, 0.10))
    assert sweep.admissible(short, AGENTS) == []
    long_ = _on_grid(0, OpenHands=_worst(0.045, 2.5, 0.10))
    assert sweep.admissible(long_, AGENTS) == ["OpenHands: solved runs paused 4.5% > 4%, lift 2.50 < 3"]
    below = _on_grid(0, mini_swe_agent=_worst(0.0, float("inf"), 0.1, precision_over=-0.01))
    assert sweep.admissible(below, AGENTS) == ["mini-swe-agent: precision not above the base rate"]
    never = _on_grid(0, SWE_agent=_worst(0.0, None, 0.0, precision_over=None))  # type: ignore[arg-type]
    assert sweep.admissible(never, AGENTS) == ["SWE-agent: a fold with no run paused"]
    erring = _on_grid(0)
    erring.figures["OpenHands"]["worst"] = {**erring.figures["OpenHands"]["worst"], "hook_errors": 2}
    assert sweep.admissible(erring, AGENTS) == ["OpenHands: 2 hook errors"]


def test_leaving_one_agent_out_scores_the_choice_of_the_other_two_on_it() -> None:
    # 10 is best on the two long-run agents but pauses the short-run agent's solved runs.
    grid = [
        _on_grid(
            10,
            mini_swe_agent=_worst(0.01, 5.0, 0.30),
            OpenHands=_worst(0.02, 5.0, 0.30),
            SWE_agent=_worst(0.08, 1.5, 0.30),
        ),
        _on_grid(20),
        _on_grid(30),
    ]
    table, rows = sweep.left_out(grid, AGENTS)
    held = {row["left_out"]: row for row in rows}
    # Chosen on the two it fits, it fails on the third.
    assert held["SWE-agent"]["chosen"] == "hooks.repeat_grace_calls=10"
    assert held["SWE-agent"]["missed"] == ["solved runs paused 8.0% > 5%", "lift 1.50 < 2"]
    assert (
        "| SWE-agent | hooks.repeat_grace_calls=10 | 8.0%, 1.50, +20.0 points, 30.0% (+1.0 points) | no: "
        in table
    )
    # With the short-run agent among the two, 10 is out and 20 sits beside it: 30 is chosen.
    assert held["mini-swe-agent"]["chosen"] == "hooks.repeat_grace_calls=30"
    assert held["mini-swe-agent"]["missed"] == []
    assert held["OpenHands"]["chosen"] == "hooks.repeat_grace_calls=30"
    # On all three, the same: 10 misses, 20 is a fit beside it.
    ranked = sweep.judge(grid, AGENTS)
    assert [j.candidate.name for j in ranked if j.eligible] == ["hooks.repeat_grace_calls=30"]


def test_a_grid_is_written_as_config_files_the_server_reads(tmp_path: Path) -> None:
    base = tmp_path / "base.toml"
    base.write_text("[thresholds]\nno_test_improvement_after = 6\n", encoding="utf-8")
    grid = ["hooks.repeat_grace_calls=0,25", "thresholds.same_error_repeated=3,4"]
    found = sweep.candidates_of(grid, str(base), tmp_path)
    assert [c.name for c in found] == [
        "hooks.repeat_grace_calls=0 thresholds.same_error_repeated=3",
        "hooks.repeat_grace_calls=0 thresholds.same_error_repeated=4",
        "hooks.repeat_grace_calls=25 thresholds.same_error_repeated=3",
        "hooks.repeat_grace_calls=25 thresholds.same_error_repeated=4",
    ]
    settings = Settings.from_sources(db=":memory:", config=found[3].config, env={})
    assert settings.hooks.repeat_grace_calls == 25
    assert settings.thresholds.same_error_repeated == 4
    assert settings.thresholds.no_test_improvement_after == 6  # the base's own


@pytest.mark.parametrize(
    ("item", "said"),
    [
        ("repeat_grace_calls=0,10", "a grid is section.key=v1,v2,... with section one of thresholds, hooks"),
        ("hooks.repeat_grace_calls=", "a grid is section.key=v1,v2,..."),
        ("hooks.repeat_grace_calls=-5", "the config is refused"),
        ("no-such.toml", "no such config file"),
    ],
)
def test_a_candidate_the_server_would_refuse_is_refused_before_any_replay(
    tmp_path: Path, item: str, said: str
) -> None:
    with pytest.raises(SystemExit) as refused:
        sweep.candidates_of([item], None, tmp_path)
    assert said in str(refused.value)
    assert item.split("=", maxsplit=1)[0] in str(refused.value)


def test_when_none_is_admissible_the_closest_is_the_one_missing_the_fewest_limits() -> None:
    grid = [
        _on_grid(0, OpenHands=_worst(0.10, 1.2, 0.30), SWE_agent=_worst(0.09, 1.0, 0.30)),
        _on_grid(10, OpenHands=_worst(0.045, 4.0, 0.02)),
    ]
    ranked = sweep.judge(grid, AGENTS)
    assert not any(j.eligible for j in ranked)
    assert sweep.why(ranked, AGENTS) == (
        "no candidate is admissible on mini-swe-agent, OpenHands, SWE-agent; the closest, "
        "hooks.repeat_grace_calls=10, misses: OpenHands: solved runs paused 4.5% > 4%"
    )
