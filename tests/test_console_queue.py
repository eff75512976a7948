"""The console's queue, a page at a time: pending escalations first, then answers the agent has
not acknowledged, newest first in each; every page says where it stands in the whole queue.

Service tests on a real migrated store (small pages, so a few escalations make several), and
the page itself over HTTP with more escalations than one page holds.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest

from console_support import RunningConsole, console_in_thread, logged_in
from mcp_server_escalation.errors import InvalidInput
from mcp_server_escalation.models.escalations import QueuePlace
from mcp_server_escalation.rules.bounds.token_scope import Scope
from mcp_server_escalation.services import escalation_answers, escalation_delivery, escalation_raising, tasks
from mcp_server_escalation.services.operator_queue import (
    QUEUE_PAGE,
    QueueFilter,
    place_after,
    queue,
    read_place,
)
from mcp_server_escalation.services.runtime import Runtime, open_runtime
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store import escalations as escalation_store

pytestmark = pytest.mark.both_backends

EVERYONE = QueueFilter()


@pytest.fixture
async def rt() -> AsyncIterator[Runtime]:
    async with open_runtime(Settings(db_path=":memory:", project_root="/p")) as opened:
        yield opened


async def ask(rt: Runtime, task_id: str, agent: str = "agent", project: str = "/work/web") -> int:
    """A question raised on a task of its own; its id."""
    await tasks.start_task(rt, title=task_id, task_id=task_id, agent_id=agent, project=project)
    raised = await escalation_raising.raise_escalation(rt, task_id=task_id, reason=f"Question of {task_id}")
    assert raised.escalation is not None
    return raised.escalation.escalation_id


async def answer(rt: Runtime, escalation_id: int) -> None:
    await escalation_answers.resolve_escalation(
        rt, escalation_id=escalation_id, response_type="guidance", content="Go on.", role="operator"
    )


async def walk(
    rt: Runtime, wanted: QueueFilter, size: int, within: Scope | None = None
) -> list[tuple[list[int], int, int]]:
    """Every page from the first, following each page's last place: (ids, before, total)."""
    pages: list[tuple[list[int], int, int]] = []
    after: QueuePlace | None = None
    while True:
        page = await queue(rt, wanted, after, size, within=within)
        pages.append(([e.escalation_id for e in page.escalations], page.before, page.total))
        if not page.escalations or page.before + len(page.escalations) >= page.total:
            return pages
        after = read_place(place_after(page.escalations[-1]))


async def test_pages_hold_pending_then_unacknowledged_answers_newest_first_and_skip_acknowledged_ones(
    rt: Runtime,
) -> None:
    ids = [await ask(rt, f"q{n}") for n in range(9)]
    for answered in ids[:4]:
        await answer(rt, answered)
    for acknowledged in ids[:2]:
        await escalation_delivery.acknowledge_response(rt, escalation_id=acknowledged)
    pending = ids[4:][::-1]
    unacknowledged = [ids[3], ids[2]]

    pages = await walk(rt, EVERYONE, size=3)

    assert [page[0] for page in pages] == [pending[:3], pending[3:5] + unacknowledged[:1], unacknowledged[1:]]
    assert [page[1] for page in pages] == [0, 3, 6]
    assert {page[2] for page in pages} == {7}


async def test_an_escalation_raised_between_two_pages_does_not_shift_the_next_page(rt: Runtime) -> None:
    ids = [await ask(rt, f"s{n}") for n in range(5)]
    first = await queue(rt, EVERYONE, None, 2)
    raised_meanwhile = await ask(rt, "s-new")
    second = await queue(rt, EVERYONE, read_place(place_after(first.escalations[-1])), 2)

    assert [e.escalation_id for e in first.escalations] == [ids[4], ids[3]]
    assert [e.escalation_id for e in second.escalations] == [ids[2], ids[1]]
    assert (second.before, second.total) == (3, 6)  # the new one is counted, above this page
    assert raised_meanwhile not in [e.escalation_id for e in second.escalations]


async def test_the_filters_apply_to_the_whole_queue_before_it_is_paged(rt: Runtime) -> None:
    ann = [await ask(rt, f"ann{n}", agent="ann", project="/work/alpha") for n in range(5)]
    for n in range(4):
        await ask(rt, f"bob{n}", agent="bob", project="/work/beta")
    await answer(rt, ann[0])

    by_agent = await walk(rt, QueueFilter(agent="ann"), size=2)
    by_name = await walk(rt, QueueFilter(project="alpha"), size=2)
    by_path = await walk(rt, QueueFilter(project="/work/beta"), size=10)
    not_a_suffix = await walk(rt, QueueFilter(project="ork/beta"), size=10)

    expected = [ann[4], ann[3], ann[2], ann[1], ann[0]]
    assert [i for page in by_agent for i in page[0]] == expected
    assert [page[2] for page in by_agent] == [5, 5, 5]
    assert [i for page in by_name for i in page[0]] == expected
    assert len(by_path[0][0]) == 4
    assert not_a_suffix == [([], 0, 0)]


async def test_a_scoped_queue_holds_only_its_scopes_escalations_paged_as_the_whole_queue(
    rt: Runtime,
) -> None:
    shop: list[int] = []
    for n in range(5):
        shop.append(await ask(rt, f"shop-{n}", project="/work/shop/api"))
        await ask(rt, f"other-{n}", project="/work/shop")  # the folder, another prefix
        await ask(rt, f"shop-away-{n}", project="/work/away")  # the prefix, another folder
    await answer(rt, shop[1])
    scope = Scope(projects=("/work/shop",), task_prefixes=("shop-",))

    pages = await walk(rt, QueueFilter(), size=2, within=scope)
    filtered = await walk(rt, QueueFilter(project="/work/shop/api"), size=10, within=scope)

    assert [page[0] for page in pages] == [[shop[4], shop[3]], [shop[2], shop[0]], [shop[1]]]
    assert [page[1] for page in pages] == [0, 2, 4]
    assert {page[2] for page in pages} == {5}
    assert filtered == [([shop[4], shop[3], shop[2], shop[0], shop[1]], 0, 5)]


async def test_no_statement_of_a_queue_page_reads_the_escalations_table_whole(rt: Runtime) -> None:
    ids = [await ask(rt, f"plan{n}", agent="ann") for n in range(4)]
    await answer(rt, ids[0])
    statements: list[str] = []

    def traced(conn: sqlite3.Connection) -> list[str]:
        conn.set_trace_callback(statements.append)
        return []

    def untraced(conn: sqlite3.Connection) -> list[str]:
        conn.set_trace_callback(None)
        plans = []
        for sql in statements:
            if sql.lstrip().upper().startswith("SELECT"):
                plans.extend(str(row[3]) for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
        return plans

    await rt.db.read(traced)
    for wanted in (EVERYONE, QueueFilter(agent="ann", project="web", type="ask_human")):
        await queue(rt, wanted, None, 2)
        await queue(rt, wanted, read_place(f"p{ids[2]}"), 2)
        await queue(rt, wanted, read_place(f"a{ids[0]}"), 2)
    plans = await rt.db.read(untraced)

    on_escalations = [plan for plan in plans if "escalations" in plan]
    assert on_escalations
    # A scan of migration 14's partial index reads the waiting answers only, never the history.
    assert all(
        re.search(r"USING (COVERING )?INDEX|USING INTEGER PRIMARY KEY", plan) for plan in on_escalations
    )
    assert any("escalations_awaiting_acknowledgement" in plan for plan in on_escalations)


@pytest.mark.parametrize("place", ["x12", "p", "p-3", "p0", "a 12", "p" + "9" * 20, "p99999999999999999999"])
def test_a_place_a_link_never_writes_is_refused_naming_after(place: str) -> None:
    with pytest.raises(InvalidInput, match=r"^after: .* 1 to 19 digits"):
        read_place(place)


async def test_a_page_larger_than_the_limit_is_refused_naming_size(rt: Runtime) -> None:
    with pytest.raises(InvalidInput, match=rf"^size: {QUEUE_PAGE + 1} .* 1 to {QUEUE_PAGE}"):
        await queue(rt, EVERYONE, None, QUEUE_PAGE + 1)


# Over HTTP: the installed console on a store with more escalations than a page holds.
ANN = QUEUE_PAGE + 3
BOB = 2


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    folder = tmp_path_factory.mktemp("console-queue")

    async def fill() -> None:
        async with open_runtime(Settings(db_path=str(folder / "console.db"), project_root="/p")) as opened:
            for n in range(ANN):
                await ask(opened, f"crowd-ann-{n:03}", agent="ann")
            for n in range(BOB):
                await ask(opened, f"crowd-bob-{n}", agent="bob")

    anyio.run(fill)
    with console_in_thread(folder) as running:
        yield running


def rows(page: str) -> list[str]:
    """The task ids of the queue's rows, in order."""
    return re.findall(r'<a href="/tasks/(crowd-[a-z]+-\d+)">', page)


def next_link(page: str) -> str | None:
    found = re.search(r'<a rel="next" href="([^"]*)">', page)
    return found.group(1).replace("&amp;", "&") if found else None


def test_the_queue_shows_a_page_says_how_many_there_are_and_links_to_the_next(
    crowded: RunningConsole,
) -> None:
    total = ANN + BOB
    with logged_in(crowded) as operator:
        first = operator.get("/").text
        link = next_link(first)
        assert link is not None
        second = operator.get(link).text
    assert f"Showing 1-{QUEUE_PAGE} of {total} escalations in the queue." in first
    assert len(rows(first)) == QUEUE_PAGE
    assert rows(first)[:2] == ["crowd-bob-1", "crowd-bob-0"]
    assert f"Showing {QUEUE_PAGE + 1}-{total} of {total} escalations" in second
    assert rows(second) == [f"crowd-ann-{n:03}" for n in range(total - QUEUE_PAGE - 1, -1, -1)]
    assert next_link(second) is None
    assert '<a href="/">← First page</a>' in second


def test_a_filtered_queue_is_paged_with_its_filter(crowded: RunningConsole) -> None:
    with logged_in(crowded) as operator:
        first = operator.get("/", params={"agent": "ann"}).text
        link = next_link(first)
        assert link is not None
        second = operator.get(link).text
    assert "agent=ann" in link
    assert f"Showing 1-{QUEUE_PAGE} of {ANN} escalations" in first
    assert f"Showing {QUEUE_PAGE + 1}-{ANN} of {ANN} escalations" in second
    assert all(row.startswith("crowd-ann-") for row in rows(first) + rows(second))
    assert len(set(rows(first) + rows(second))) == ANN


def test_a_place_no_link_writes_gets_400_naming_after(crowded: RunningConsole) -> None:
    with logged_in(crowded) as operator:
        refused = operator.get("/", params={"after": "<script>"})
    assert refused.status_code == 400
    assert "after: " in refused.text
    assert "<script>" not in refused.text


def test_a_thousand_escalations_count_with_a_thousands_separator(tmp_path: Path) -> None:
    async def fill() -> None:
        async with open_runtime(Settings(db_path=str(tmp_path / "console.db"), project_root="/p")) as opened:
            await tasks.start_task(opened, title="many", task_id="many")
            raised = await escalation_raising.raise_escalation(
                opened, task_id="many", reason="Question 0", blocking=False
            )
            first = raised.escalation
            assert first is not None

            def a_thousand_more(conn: sqlite3.Connection) -> None:
                # Like the first, in one transaction: the count is under test, not raising.
                for n in range(1, 1_001):
                    escalation_store.insert(
                        conn,
                        task_id="many",
                        agent_id=first.agent_id,
                        generation=1,
                        type_=first.type,
                        priority=first.priority,
                        blocking=False,
                        triggers=first.triggers,
                        response_options=first.response_options,
                        context=first.context,
                        reason=f"Question {n}",
                        question=None,
                        options=[],
                        follow_up_of=None,
                        now=opened.now(),
                    )

            await opened.db.write(a_thousand_more)

    anyio.run(fill)
    with console_in_thread(tmp_path) as running, logged_in(running) as operator:
        assert "Showing 1-200 of 1,001 escalations" in operator.get("/").text
