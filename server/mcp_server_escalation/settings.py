"""Settings, read once at start-up (CLI flags > environment > config file > defaults).

Config file (TOML): ``--config PATH``, else ``ESCALATION_CONFIG``, else the per-user file
``${XDG_CONFIG_HOME:-~/.config}/mcp-server-escalation/config.toml`` when it exists. Every
process reads the same file the same way (the server a host launches without our variables,
the operator CLI, each hook run), so notifiers and thresholds set once apply everywhere. A
path given explicitly must exist: a mistyped one is an error naming it, never the defaults::

    prompts_dir = "~/my-prompts"   # replaces the packaged prompts/ (all templates required)

    [thresholds]          # any field of Thresholds
    same_error_repeated = 4

    [notify]              # operator notifiers
    command = "notify-send escalation"
    webhook_url = "https://chat.example/hook"
    renotify_minutes = 30

    [guidance]
    k = 5

    [elicitation]         # ask the human in the client (MCP elicitation): auto | on | off
    mode = "auto"
    console_url = "http://127.0.0.1:8766"   # point URL-mode clients at the console

    [hooks]               # host hooks (models/hook_config.py; docs/hooks.md)
    attempts = ["test_run"]

    [store]               # bounds and pool sizes (models/store_config.py; docs/postgresql.md)
    operation_timeout_seconds = 8
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import ConfigError
from .locations import chosen_store, default_config, default_store, is_database_url
from .models.hook_config import HooksConfig
from .models.limits import Role
from .models.store_config import StoreConfig
from .models.thresholds import ThresholdOverrides, Thresholds


class NotifyConfig(BaseModel):
    """Operator notifiers (the ``[notify]`` table)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    command: str | None = None
    webhook_url: Annotated[str | None, Field(pattern=r"^https?://")] = None
    renotify_minutes: Annotated[float, Field(ge=0)] = 0
    timeout_seconds: Annotated[
        float, Field(gt=0, le=600, description="A command or webhook call taking longer has failed")
    ] = 10
    retry_seconds: Annotated[
        float, Field(gt=0, le=3600, description="Wait after the first failed attempt; doubles per attempt")
    ] = 5
    retry_max_seconds: Annotated[
        float, Field(gt=0, le=86400, description="The longest wait between two attempts")
    ] = 300


class ElicitationConfig(BaseModel):
    """Asking the human in the client (the ``[elicitation]`` table).

    ``auto`` (the default) asks on stdio connections only, and only while the agent itself
    waits in ``get_escalation``; ``on`` also asks over HTTP; ``off`` never asks.
    ``console_url`` is where the human reaches the operator console: a client that can open
    a link (URL mode) is sent ``<console_url>/escalations/<id>`` instead of a form.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    mode: Literal["auto", "on", "off"] = "auto"
    console_url: Annotated[
        str | None,
        Field(
            pattern=r"^https?://[^/?#\s]+(/[^?#\s]*)?$",
            max_length=2048,
            description="The console's public base URL (no query); unset: no URL elicitation",
        ),
    ] = None


class WaitingConfig(BaseModel):
    """The waits the server's messages ask for (the ``[waiting]`` table): the
    ``wait_seconds`` of each ``get_escalation`` call a pause message spells out.

    ``seconds`` is what most clients are asked for: under the 5 s request timeout of
    openai-agents' ``MCPServerStdio``, the shortest default of the clients people use, so a
    client with its defaults can follow every message. ``form_seconds`` is asked of a
    connection whose client can ask the person at it (it declared elicitation: an
    interactive host, whose requests wait long), since the form lasts as long as the wait.
    A connection that cut a wait short is asked for shorter ones (adapters/mcp/waits.py).
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    seconds: Annotated[int, Field(ge=1, le=60, description="The wait asked of most clients")] = 4
    form_seconds: Annotated[
        int, Field(ge=1, le=60, description="The wait asked of clients that declared elicitation")
    ] = 30


class GuidanceConfig(BaseModel):
    """Guidance defaults (the ``[guidance]`` table)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    k: Annotated[int, Field(ge=1, le=20)] = 5


# The config models build their validators when a config file is validated, not at
# import, and their defaults are taken as written (``model_construct``): building them all
# was ~10 ms of every start, against a cold start that must stay within 1.15x of a minimal
# server (benchmarks/README.md), and the defaults are valid by construction
# (tests/test_settings_defaults.py holds them to what validation gives).
class ConfigFile(BaseModel):
    """The whole config file; unknown tables or keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    prompts_dir: str | None = Field(
        None, description="A folder of prompt templates replacing the packaged prompts/"
    )
    thresholds: ThresholdOverrides = Field(default_factory=ThresholdOverrides.model_construct)
    notify: NotifyConfig = Field(default_factory=NotifyConfig.model_construct)
    guidance: GuidanceConfig = Field(default_factory=GuidanceConfig.model_construct)
    elicitation: ElicitationConfig = Field(default_factory=ElicitationConfig.model_construct)
    waiting: WaitingConfig = Field(default_factory=WaitingConfig.model_construct)
    hooks: HooksConfig = Field(default_factory=HooksConfig.model_construct)
    store: StoreConfig = Field(default_factory=StoreConfig.model_construct)


def default_db_path(env: Mapping[str, str] | None = None) -> Path:
    """``${XDG_DATA_HOME:-~/.local/share}/mcp-server-escalation/escalations.db``."""
    return Path(default_store(os.environ if env is None else env))


def resolve_db_path(flag: str | None, env: Mapping[str, str] | None = None) -> str:
    """The store path: ``--db``, else ``ESCALATION_DB``, else the per-user default."""
    chosen = chosen_store(flag, os.environ if env is None else env)
    return chosen if chosen == ":memory:" or is_database_url(chosen) else str(Path(chosen).expanduser())


STORE_VARIABLE = "ESCALATION_STORE_{}"


def store_config(loaded: StoreConfig, env: Mapping[str, str]) -> StoreConfig:
    """The ``[store]`` table with each ``ESCALATION_STORE_<KEY>`` variable set over it
    (``ESCALATION_STORE_OPERATION_TIMEOUT_SECONDS=4``)."""
    given = {
        name: env[STORE_VARIABLE.format(name.upper())]
        for name in StoreConfig.model_fields
        if STORE_VARIABLE.format(name.upper()) in env
    }
    if not given:
        return loaded
    try:
        return StoreConfig.model_validate({**loaded.model_dump(), **given})
    except ValidationError as exc:
        raise ConfigError(f"{STORE_VARIABLE.format('*')}: {exc}") from exc


def config_path(
    path: str | None, env: Mapping[str, str] | None = None, cwd: str | None = None
) -> Path | None:
    """The config file to read: ``path``, else ``ESCALATION_CONFIG``, else the per-user file
    if it exists; None when there is none. An explicit path that does not exist is an error."""
    env = os.environ if env is None else env
    chosen = path or env.get("ESCALATION_CONFIG")
    if not chosen:
        default = Path(default_config(env))
        return default if default.exists() else None
    resolved = Path(cwd or ".") / Path(chosen).expanduser()
    if not resolved.exists():
        origin = "--config" if path else "ESCALATION_CONFIG"
        shown = chosen if Path(chosen).is_absolute() else f"{chosen} ({resolved.absolute()})"
        raise ConfigError(f"config {shown}: no such file (given by {origin})")
    return resolved


class FileStamp(NamedTuple):
    """Which file, in which state: a file edited or replaced since has another stamp."""

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileStamp:
        """The stamp of a ``stat`` result."""
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass(frozen=True)
class LoadedConfig:
    """A config file as it was read: its content, and the file it came from."""

    content: ConfigFile
    stamp: FileStamp


def load_config(path: Path) -> LoadedConfig:
    """One config file, validated whole, with the stamp of the file read.

    The stamp is taken before the read: a file changed while it was read is stamped as it
    was before, so it never passes for the file this content came from (``hooks/relay_server.py``).
    """
    try:
        with path.open("rb") as file:
            stamp = FileStamp.of(os.fstat(file.fileno()))
            text = file.read().decode("utf-8")
        return LoadedConfig(ConfigFile.model_validate(tomllib.loads(text)), stamp)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ValidationError) as exc:
        raise ConfigError(f"config {path}: {exc}") from exc


@dataclass(frozen=True)
class Settings:
    """Everything the server and the CLI need to know, decided once."""

    db_path: str = ":memory:"
    role: Role = "agent"
    config_path: str | None = None  # the config file read, if any (for logs and ``hook install``)
    prompts_dir: Path | None = None
    project_root: str = field(default_factory=os.getcwd)
    thresholds: Thresholds = field(default_factory=Thresholds.model_construct)
    notify: NotifyConfig = field(default_factory=NotifyConfig.model_construct)
    guidance: GuidanceConfig = field(default_factory=GuidanceConfig.model_construct)
    elicitation: ElicitationConfig = field(default_factory=ElicitationConfig.model_construct)
    waiting: WaitingConfig = field(default_factory=WaitingConfig.model_construct)
    hooks: HooksConfig = field(default_factory=HooksConfig.model_construct)
    store: StoreConfig = field(default_factory=StoreConfig.model_construct)
    loaded_config: LoadedConfig | None = None  # the config file read, if any (the relay compares it)

    @classmethod
    def from_sources(
        cls,
        *,
        db: str | None = None,
        config: str | None = None,
        role: Role = "agent",
        prompts: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> Settings:
        """Settings from CLI flags, the environment and the config file.

        ``env`` and ``cwd`` default to this process's; the hook relay passes the hook
        process's, so a relayed event is decided exactly as the hook itself would decide it.
        """
        env = os.environ if env is None else env
        chosen = config_path(config, env, cwd)
        loaded = None if chosen is None else load_config(chosen)
        return cls.from_config(loaded, chosen, db=db, role=role, prompts=prompts, env=env, cwd=cwd)

    @classmethod
    def from_config(
        cls,
        config: LoadedConfig | None,
        chosen: Path | None,
        *,
        db: str | None = None,
        role: Role = "agent",
        prompts: str | None = None,
        env: Mapping[str, str],
        cwd: str | None = None,
    ) -> Settings:
        """Settings from a config file already read (``config``, from the file ``chosen``)."""
        loaded = ConfigFile.model_construct() if config is None else config.content
        prompts_dir = prompts or env.get("ESCALATION_PROMPTS") or loaded.prompts_dir
        db_path = resolve_db_path(db, env)
        if cwd is not None and db_path != ":memory:" and not is_database_url(db_path):
            db_path = str(Path(cwd) / db_path)  # a relative --db is the hook's, not ours
        return cls(
            db_path=db_path,
            role=role,
            config_path=None if chosen is None else str(chosen.absolute()),
            prompts_dir=(Path(cwd or ".") / Path(prompts_dir).expanduser()) if prompts_dir else None,
            project_root=cwd or str(Path.cwd()),
            thresholds=Thresholds.model_construct().merged(loaded.thresholds),
            notify=loaded.notify,
            guidance=loaded.guidance,
            elicitation=loaded.elicitation,
            waiting=loaded.waiting,
            hooks=loaded.hooks,
            store=store_config(loaded.store, env),
            loaded_config=config,
        )
