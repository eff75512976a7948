"""Operators' verdicts beside the replay's figures: the replay of real agent runs writes each
trigger type's precision per corpus to ``data/replay_figures.toml`` (the one source), and
``stats`` (CLI and console) shows, per type, how often operators judged it useful next to it."""

from __future__ import annotations

import asyncio
import html
import json
import sys
from pathlib import Path

from console_support import console_in_thread, logged_in
from mcp_server_escalation.datafiles import parse_replay_figures, replay_figures
from mcp_server_escalation.models.reports import ReplayFigure, VerdictCount
from mcp_server_escalation.rules.operators.verdicts import beside_replay
from mcp_server_escalation.rules.wording.words import CORPUS_WORDS
from operator_support import run_cli
from test_verdicts import repeat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import replay_trajectories as replay  # noqa: E402

SLICE = ROOT / "tests" / "data" / "trajectories-slice.jsonl.gz"


def figure(corpus: str, type_: str, precision: float, paused: int) -> ReplayFigure:
    return ReplayFigure(
        corpus=corpus, type=type_, runs=250, paused=paused, precision=precision, base_rate=0.26
    )


def test_verdicts_of_every_project_sit_beside_each_corpus_precision_per_type() -> None:
    counts = [
        VerdictCount(type="repeated_error", project="shop", useful=1, false_alarm=2),
        VerdictCount(type="repeated_error", project="blog", useful=1, false_alarm=0),
        VerdictCount(type="ask_human", project="shop", useful=3, false_alarm=0),
    ]
    figures = [
        figure("b-corpus", "repeated_error", 0.88, 26),
        figure("a-corpus", "repeated_error", 1.0, 8),
        figure("a-corpus", "any", 0.67, 9),
        figure("a-corpus", "test_stall", 1.0, 1),
    ]
    judged = {j.type: j for j in beside_replay(counts, figures)}
    assert list(judged) == ["ask_human", "repeated_error", "test_stall"]
    repeated = judged["repeated_error"]
    assert (repeated.useful, repeated.false_alarm, repeated.useful_share) == (2, 2, 0.5)
    assert [(f.corpus, f.precision) for f in repeated.replay] == [("a-corpus", 1.0), ("b-corpus", 0.88)]
    assert judged["ask_human"].replay == []  # the agent's own question: nothing to replay
    assert judged["test_stall"].useful_share is None  # measured, not judged yet


def test_the_replay_writes_the_figures_stats_reads(tmp_path: Path) -> None:
    figures = replay.summarise(asyncio.run(replay.replay(SLICE, tmp_path, None, None)))
    text = replay.figures_toml({"trajectories-slice.jsonl.gz": figures}, "2026-11-28")
    read = {f.type: f for f in parse_replay_figures(text)}
    assert set(read) == {"any", "repeated_error"}
    assert read["repeated_error"].corpus == "trajectories-slice"
    assert read["repeated_error"].paused == figures["by_type"]["repeated_error"]["runs"] == 1
    assert read["repeated_error"].precision == figures["by_type"]["repeated_error"]["precision"] == 1.0
    assert read["any"].base_rate == figures["overall"]["base_rate"]
    # The packaged file is one the replay wrote: the three development corpora, every pause and
    # each type, each corpus named in words where stats shows it.
    packaged = replay_figures()
    corpora = {f.corpus for f in packaged}
    assert corpora == {"trajectories-dev", "trajectories-openhands-dev", "trajectories-sweagent-dev"}
    assert corpora <= set(CORPUS_WORDS)
    assert {(f.corpus, f.type) for f in packaged} >= {
        (c, t) for c in corpora for t in ("any", "repeated_error")
    }


async def test_stats_shows_each_kinds_verdicts_beside_the_replays_precision(tmp_path: Path) -> None:
    packaged = {f.corpus: f for f in replay_figures() if f.type == "repeated_error"}
    with console_in_thread(tmp_path / "console") as console:
        for n, verdict in enumerate(("useful", "useful", "false-alarm")):
            escalation_id = await repeat(console.db_path, f"beside-{n}", "shop")
            code, _, err = await run_cli(
                "--db",
                console.db_path,
                "escalations",
                "respond",
                str(escalation_id),
                "--guidance",
                "Look again",
                "--verdict",
                verdict,
                home=tmp_path,
            )
            assert code == 0, err
        code, out, err = await run_cli("--db", console.db_path, "stats", "--json", home=tmp_path)
        assert code == 0, err
        judged = {j["type"]: j for j in json.loads(out)["judged_by_type"]}
        repeated = judged["repeated_error"]
        assert (repeated["useful"], repeated["false_alarm"], repeated["useful_share"]) == (2, 1, 0.6667)
        assert {f["corpus"]: f["precision"] for f in repeated["replay"]} == {
            name: f.precision for name, f in packaged.items()
        }
        code, text, err = await run_cli("--db", console.db_path, "stats", home=tmp_path, COLUMNS="200")
        assert code == 0, err
        dev = packaged["trajectories-dev"]
        assert "repeated error: 2 useful, 1 false alarm (67% judged useful)" in text
        said = f"{dev.precision:.0%} of {dev.paused} paused real runs of mini-swe-agent with Gemini 3 Pro"
        assert said in text
        assert "trajectories" not in text  # the corpora are named by their agents, not their files
        with logged_in(console) as client:
            page = html.unescape(client.get("/stats").text)
    row = page[
        page.index('<table class="judged">') : page.index("</table>", page.index('<table class="judged">'))
    ]
    assert "<td>repeated error</td><td>2</td><td>1</td><td>67%</td>" in row
    assert said in row
    assert "trajectories" not in row
    assert "repeated_error" not in row
