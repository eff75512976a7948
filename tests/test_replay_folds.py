"""The replay's folds, its length-cap baseline and its early-stop figures
(benchmarks/replay_folds.py), on runs written for these tests in the corpora's record format
and replayed through the hook path (benchmarks/replay_outcomes.py: in parallel, cached)."""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import replay_core  # noqa: E402
import replay_folds as folds  # noqa: E402
import replay_outcomes  # noqa: E402


def _step(command: str, output: str = "", returncode: int = 0) -> dict:
    return {"command": command, "output": output, "returncode": returncode}


FAILING = (
    "F\n================ FAILURES ================\n"
    "E       AssertionError: add(2, 2) returned 5\n"
    "FAILED tests/test_calc.py::test_add - AssertionError: add(2, 2) returned 5\n1 failed in 0.02s\n"
)


def _stuck(pairs: int) -> list[dict]:
    """The classic loop: an edit of the source, then the same test failing the same way."""
    steps = [_step("cat calc.py", "def add(a, b):\n    return a + b + 1\n")]
    for attempt in range(pairs):
        steps += [
            _step(f"sed -i 's/return .*/return a + b + {attempt}/' calc.py"),
            _step("python -m pytest tests/test_calc.py -q", FAILING, 1),
        ]
    return steps


def _healthy(length: int) -> list[dict]:
    """Reading and searching, every command going through."""
    return [_step(f"grep -n 'def f{n}' src/module_{n}.py", f"{n}:def f{n}():") for n in range(length)]


def _corpus(tmp_path: Path, runs: list[tuple[str, bool, list[dict]]]) -> Path:
    path = tmp_path / "corpus.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as out:
        for run_id, resolved, steps in runs:
            record = {"instance_id": run_id, "resolved": resolved, "steps": [*steps, _step("finish")]}
            out.write(json.dumps(record) + "\n")
    return path


# Two instances run three times each (SWE-agent's ids), and two runs of other instances.
RUNS = [
    ("calc__calc-1@run1", False, _stuck(30)),  # 61 steps, paused
    ("calc__calc-1@run2", True, _stuck(30)),  # 61 steps, paused: a false alarm
    ("calc__calc-1@run3", True, _healthy(8)),
    ("calc__calc-3@run1", True, _healthy(15)),
    ("calc__calc-3@run2", False, _healthy(20)),
    ("calc__calc-3@run3", True, _healthy(61)),
]


def test_a_runs_fold_is_a_fixed_hash_of_its_instance_and_no_instance_is_split() -> None:
    ids = [f"owner__repo-{n}@run{r}" for n in range(40) for r in (1, 2, 3)]
    for run_id in ids:
        instance = run_id.split("@")[0]
        # The documented rule, written the plain way.
        expected = int(hashlib.sha256(instance.encode()).hexdigest()[:16], 16) % 5
        assert folds.fold_of(run_id) == expected
    assert folds.fold_of("django__django-11099") == folds.fold_of("django__django-11099@run2")

    class Run:
        def __init__(self, run: str) -> None:
            self.run = run

    split = folds.split([Run(i) for i in ids])  # type: ignore[misc]
    assert len(split) == 5
    assert sorted(r.run for fold in split for r in fold) == sorted(ids)  # each run once
    for fold in split:
        for other in split:
            if fold is not other:
                assert not {r.run.split("@")[0] for r in fold} & {r.run.split("@")[0] for r in other}
    assert all(fold for fold in split)  # 40 instances fill every fold
    assert [[r.run for r in f] for f in folds.split([Run(i) for i in ids])] == [  # type: ignore[misc]
        [r.run for r in f] for f in split
    ]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> list[replay_core.Replayed]:
    folder = tmp_path_factory.mktemp("corpus")
    return replay_outcomes.outcomes(_corpus(folder, RUNS), None, jobs=2, cache=folder / "cache")


def test_the_length_cap_pauses_as_few_solved_runs_as_the_config_and_saves_what_it_saves(
    replayed: list[replay_core.Replayed],
) -> None:
    by_id = {r.run: r for r in replayed}
    stuck, false_alarm = by_id["calc__calc-1@run1"], by_id["calc__calc-1@run2"]
    assert stuck.pause is not None
    assert false_alarm.pause is not None
    assert [r.run for r in replayed if r.pause] == [stuck.run, false_alarm.run]
    assert [r.steps for r in replayed] == [61, 61, 8, 15, 20, 61]
    figures = folds.measure(replayed)
    assert figures["solved_paused"] == 1 / 4
    assert figures["unsolved_paused"] == 1 / 2
    assert figures["lift"] == 2.0
    # Solved runs are 61, 61, 15 and 8 steps long: one of four may be paused, so the cap is
    # the second longest, 61 (a cap at 60 would pause both runs of 61 steps).
    assert figures["cap_step"] == 61
    assert figures["cap_solved_paused"] == 0.0
    assert figures["cap_unsolved_steps_saved"] == 0.0
    pause = stuck.pause.step
    assert figures["unsolved_steps_saved"] == (61 - pause) / (61 + 20)
    assert figures["saved_over_cap"] == (61 - pause) / (61 + 20)
    # With no solved run paused, the cap may pause none: it sits at the longest solved run.
    unpaused = [r._replace(pause=None) if r.resolved else r for r in replayed]
    assert folds.length_cap(unpaused, 0.0) == 61
    # Half the solved runs allowed: the cap at 15 pauses the two of 61 steps, and saves 5 of
    # the 20-step unsolved run's steps and 46 of the 61-step one's.
    assert folds.length_cap(replayed, 0.5) == 15
    assert folds.cap_figures(replayed, 15) == {
        "solved_paused": 0.5,
        "unsolved_paused": 1.0,
        "unsolved_steps_saved": (46 + 5) / 81,
    }


def test_the_early_stop_figures_count_the_steps_cut_and_the_solved_runs_stopped(
    replayed: list[replay_core.Replayed],
) -> None:
    pause = replayed[0].pause.step  # type: ignore[union-attr]
    assert replayed[1].pause.step == pause  # type: ignore[union-attr]  # the same loop, the same step
    stop = folds.early_stop(replayed)
    assert stop["steps_cut"] == 2 * (61 - pause) / (61 + 61 + 8 + 15 + 20 + 61)
    assert stop["resolution_lost_points"] == 100 * 1 / 6


def test_the_worst_fold_is_each_figures_worst_and_an_undefined_one_is_worst_of_all() -> None:
    assert folds.worst([0.01, 0.05, 0.02], "solved_paused") == 0.05
    assert folds.worst([0.2, 0.1, 0.3], "unsolved_steps_saved") == 0.1
    assert folds.worst([3.0, float("inf"), 2.5], "lift") == 2.5
    assert folds.worst([0.4, 0.9], "pause_share") == 0.9  # the later pause
    assert folds.worst([0.1, None], "unsolved_steps_saved") is None  # nothing paused in a fold
    with pytest.raises(KeyError):
        folds.worst([1.0], "runs")


def test_a_corpus_is_judged_on_its_folds(replayed: list[replay_core.Replayed]) -> None:
    figures = folds.by_folds(replayed)
    each = figures["folds"]
    assert sum(f["runs"] for f in each) == 6
    # The three runs of each instance in one fold (the two instances' hashes differ).
    assert folds.fold_of("calc__calc-1") != folds.fold_of("calc__calc-3")
    assert each[folds.fold_of("calc__calc-1")]["runs"] == 3
    assert each[folds.fold_of("calc__calc-3")]["runs"] == 3
    filled = [f for f in each if f["runs"]]
    for name in ("unsolved_steps_saved", "solved_paused", "hook_errors"):
        values = [f[name] for f in filled]
        assert figures["worst"][name] == folds.worst(values, name)
        defined = [v for v in values if v is not None]
        assert figures["spread"][name] == ((min(defined), max(defined)) if defined else None)
    assert figures["worst"]["hook_errors"] == 0
    assert figures["whole"] == folds.measure(replayed)


def test_outcomes_are_replayed_once_and_read_back_for_the_same_code_corpus_and_config(
    tmp_path: Path, replayed: list[replay_core.Replayed]
) -> None:
    corpus = _corpus(tmp_path, RUNS[:3])
    cache = tmp_path / "cache"
    first = replay_outcomes.outcomes(corpus, None, jobs=1, cache=cache)
    [kept] = list(cache.iterdir())
    assert len(kept.read_text().splitlines()) == 3
    assert first == replayed[:3]  # one process or two, the same outcomes
    assert replay_outcomes.outcomes(corpus, None, jobs=2, cache=cache) == first
    assert len(kept.read_text().splitlines()) == 3  # nothing replayed again
    # A record of the cache is the outcome it holds: change one and it is what is read back.
    lines = [json.loads(line) for line in kept.read_text().splitlines()]
    lines[2]["steps"] = 999
    kept.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert replay_outcomes.outcomes(corpus, None, cache=cache)[2].steps == 999
    # Another config is another key: replayed anew.
    config = tmp_path / "config.toml"
    config.write_text("[thresholds]\nsame_error_repeated = 4\n", encoding="utf-8")
    again = replay_outcomes.outcomes(corpus, str(config), cache=cache)
    assert again[2].steps == 8
    assert len(list(cache.iterdir())) == 2
    # As are other code and another corpus.
    assert replay_outcomes.cache_key(corpus, None, False, "a") != replay_outcomes.cache_key(
        corpus, None, False, "b"
    )
    assert replay_outcomes.cache_key(corpus, None, False, "a") != replay_outcomes.cache_key(
        corpus, None, True, "a"
    )


def test_swe_agents_line_edit_is_the_hosts_edit_in_its_checkout() -> None:
    path = "/workspace/psf__requests/requests/api.py"
    command = f'str_replace_editor edit {path} --lines "3:4" --new_str "x = 2"'
    assert replay_core.editor_call(command) == (
        "Edit",
        {"file_path": path, "old_string": "", "new_string": "x = 2"},
    )
    run = {"instance_id": "psf__requests-1@run1", "resolved": False, "steps": [_step(command)]}
    assert replay_core.project_of(run) == "/workspace/psf__requests"
    # OpenHands' checkouts carry a version and its scripts sit beside them: /workspace.
    openhands = {"steps": [_step("ls /workspace/psf__requests__2.0/"), _step("python /workspace/r.py")]}
    assert replay_core.project_of(openhands) == "/workspace"
    assert replay_core.project_of({"steps": [_step("ls -R")]}) == "/testbed"
