"""The client half of the MCP tasks extension, for tests through the SDK's own ``Client``.

``mcp`` 2.3 has no tasks runtime on either side; its client takes an extension that
declares the capability and claims the ``resultType: "task"`` result of ``tools/call``
(``Client(..., extensions=[TasksClient()])``). These helpers then call a tool with the claim
allowed (the task comes back as it is, not driven to its end) and send ``tasks/get``,
``tasks/update`` and ``tasks/cancel`` as the extension defines them.
"""

from __future__ import annotations

from typing import Any, Literal

from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp_types import CallToolResult, Request, RequestParams, Result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict, Field

TASKS = "io.modelcontextprotocol/tasks"


class _TaskFields(Result):
    model_config = ConfigDict(populate_by_name=True)

    task_id: str = Field(alias="taskId")
    status: str
    status_message: str | None = Field(None, alias="statusMessage")
    created_at: str = Field(alias="createdAt")
    last_updated_at: str = Field(alias="lastUpdatedAt")
    ttl_ms: int | None = Field(None, alias="ttlMs")
    poll_interval_ms: int | None = Field(None, alias="pollIntervalMs")


class CreatedTask(_TaskFields):
    result_type: Literal["task"] = Field(alias="resultType")


class DetailedTask(_TaskFields):
    result_type: str = Field(alias="resultType")
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = Field(None, alias="inputRequests")


class _TaskParams(RequestParams):
    model_config = ConfigDict(populate_by_name=True)

    task_id: str = Field(serialization_alias="taskId")


class _UpdateParams(_TaskParams):
    input_responses: dict[str, Any] = Field(serialization_alias="inputResponses")


class _Get(Request[_TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: _TaskParams


class _Update(Request[_UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: _UpdateParams


class _Cancel(Request[_TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: _TaskParams


async def _not_driven(_created: CreatedTask, _ctx: ClaimContext) -> CallToolResult:
    raise AssertionError("the tests drive a task by hand (allow_claimed=True)")


class TasksClient(ClientExtension):
    """Declares the tasks extension and claims the task result of ``tools/call``."""

    identifier = TASKS

    def claims(self) -> tuple[ResultClaim[Any], ...]:
        return (
            ResultClaim(
                result_type="task",
                model=CreatedTask,
                resolve=_not_driven,
                protocol_versions=frozenset(MODERN_PROTOCOL_VERSIONS),
            ),
        )


async def call_as_task(client: Client, tool: str, **arguments: Any) -> CreatedTask | CallToolResult:
    """The tool called with a task allowed: the task, or the plain result the server chose."""
    result = await client.session.call_tool(tool, arguments, allow_claimed=True)
    assert isinstance(result, CreatedTask | CallToolResult), result
    return result


async def get_task(client: Client, task_id: str) -> DetailedTask:
    return await client.session.send_request(_Get(params=_TaskParams(task_id=task_id)), DetailedTask)


async def update_task(client: Client, task_id: str, responses: dict[str, Any]) -> None:
    await client.session.send_request(
        _Update(params=_UpdateParams(task_id=task_id, input_responses=responses)), Result
    )


async def cancel_task(client: Client, task_id: str) -> None:
    await client.session.send_request(_Cancel(params=_TaskParams(task_id=task_id)), Result)
