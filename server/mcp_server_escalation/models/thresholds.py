"""Escalation thresholds: defaults, config overrides and per-task overrides."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

PositiveLimit = Annotated[int, Field(ge=1, le=1_000_000)]
Similarity = Annotated[float, Field(gt=0.0, le=1.0)]


class Thresholds(BaseModel):
    """The effective thresholds of a task. Every trigger reads its limit from here."""

    # Built at first validation (a task's first read or start_task), not at import, to keep
    # it out of cold start. The defaults are valid as written, so they are used unvalidated.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    same_error_repeated: PositiveLimit = 3
    # A blocker read off a tool's output (not declared by the caller) escalates once it
    # repeats this many times in a row (the allowance of any other error); 1: at once.
    blocker_repeated: PositiveLimit = 3
    total_verification_attempts: PositiveLimit = 10
    no_file_changes_after_attempts: PositiveLimit = 5
    # Measured on real runs of two agents: at 3 it paused as many runs that went on to succeed
    # as runs that failed (docs/triggers.md).
    no_test_improvement_after: PositiveLimit = 5
    files_modified_exceeds: PositiveLimit = 20
    spec_deviation_detected: bool = True
    stagnation_patience: PositiveLimit = 3
    stagnation_similarity: Similarity = 0.7
    max_escalation_cycles: Annotated[int, Field(ge=0, le=1000)] = 2
    # The model is warned this many counts before a repeat threshold (same error, no file
    # change, test stall, verification limit); 0: no warnings.
    warn_before: Annotated[int, Field(ge=0, le=1000)] = 1
    # Budgets: caps that pause the task and ask a human; None switches one off (the default).
    max_tool_calls: PositiveLimit | None = None
    max_minutes: PositiveLimit | None = None
    max_failing_test_runs: PositiveLimit | None = None

    def merged(self, overrides: ThresholdOverrides | None) -> Thresholds:
        """These thresholds with every field the overrides set replaced."""
        if overrides is None:
            return self
        # Iterating reads the field values without building the model's serializer.
        changes = {name: value for name, value in overrides if value is not None}
        return self.model_copy(update=changes) if changes else self


def _overrides_of(defaults: type[BaseModel]) -> type[BaseModel]:
    """A model of the same fields as ``defaults``, each optional and unset by default, with
    the same constraints and descriptions: a threshold is declared once, in ``Thresholds``."""
    hints = get_type_hints(defaults, include_extras=True)
    fields: dict[str, Any] = {
        name: (hints[name] | None, Field(None, description=info.description))
        for name, info in defaults.model_fields.items()
    }
    return create_model(
        "ThresholdOverrides",
        __config__=ConfigDict(extra="forbid", defer_build=True),
        __doc__="Per-task (or config) changes to the defaults; unset fields keep the default.",
        __module__=__name__,
        **fields,
    )


if TYPE_CHECKING:
    # What the checker reads: a model whose every field is a threshold or None.
    class ThresholdOverrides(BaseModel):
        """Per-task (or config) changes to the defaults; unset fields keep the default."""

        def __getattr__(self, name: str) -> Any: ...

else:
    ThresholdOverrides = _overrides_of(Thresholds)
