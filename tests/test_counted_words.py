"""A count the model reads comes with its noun as a person writes it, "1 occurrence", "2
occurrences", never "occurrence(s)": the templates say both forms
(``{occurrences:occurrence|occurrences}``) and the prompt book picks one, through the real SDK
client."""

from __future__ import annotations

from conftest import connect


async def test_a_count_the_model_reads_has_its_noun_in_the_singular_or_the_plural(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Counts", task_id="counts")
        once = await agent.call("record_failure", task_id="counts", message="KeyError: 'EUR'")
        twice = await agent.call("record_failure", task_id="counts", message="KeyError: 'EUR'")
        one_file = await agent.call("check_edit", task_id="counts", paths=["src/a.py"])
        two_files = await agent.call("check_edit", task_id="counts", paths=["src/a.py", "src/b.py"])
        short = await agent.error("start_task", title="")
    told = [once["message"], twice["message"], one_file["message"], two_files["message"], short]
    assert "1 occurrence in this task" in once["message"], once["message"]
    assert "2 occurrences in this task" in twice["message"], twice["message"]
    assert "the 1 requested file of task" in one_file["message"], one_file["message"]
    assert "the 2 requested files of task" in two_files["message"], two_files["message"]
    assert "title: must be at least 1 character long" in short, short
    assert [text for text in told if "(s)" in text] == []
