"""One YAML config validated into typed config; unknown keys are errors naming the key.

CLI flags override the file. Secrets are never config values: the config names the environment
variable that holds them (e.g. `api_key_env: OPENAI_API_KEY`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from construction.errors import WorkbenchError


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunnerConfig(Section):
    jobs: int | None = Field(None, ge=1, description="worker processes; default: the CPU cores available")
    batch_size: int = Field(8, ge=1)


class GenerateConfig(Section):
    backend: Literal["catalog", "openai"] = "catalog"
    per_category: int = Field(10, ge=1)
    taxonomy: str | None = None  # path to a taxonomy YAML; default: the one shipped in the package
    categories: list[str] | None = None  # default: every category of the taxonomy
    near_duplicate_ratio: float = Field(95.0, ge=0, le=100, description="rapidfuzz ratio of speech texts")
    max_draws_per_sample: int = Field(20, ge=1, description="attempts per wanted script before giving up")
    # openai backend
    llm_base_url: str | None = None
    llm_model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = Field(1.0, ge=0, le=2)
    scripts_per_request: int = Field(5, ge=1, le=50)
    timeout_s: float = Field(60.0, gt=0)
    max_retries: int = Field(4, ge=0)


class Config(Section):
    seed: int = 0
    release_licence: str = "CC-BY-4.0"
    runner: RunnerConfig = RunnerConfig()
    generate: GenerateConfig = GenerateConfig()


def _describe(exc: ValidationError, source: str) -> str:
    problems = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            problems.append(f"unknown key '{key}'")
        else:
            problems.append(f"'{key}': {err['msg']}")
    return f"invalid config {source}: " + "; ".join(problems)


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> Config:
    """Read YAML (if given), apply dotted-key overrides from the CLI, validate."""
    data: dict[str, Any] = {}
    source = "(defaults)"
    if path is not None:
        source = str(path)
        try:
            data = yaml.safe_load(Path(path).read_text()) or {}
        except FileNotFoundError as exc:
            raise WorkbenchError(f"config file not found: {path}") from exc
        except yaml.YAMLError as exc:
            raise WorkbenchError(f"config file {path} is not valid YAML: {exc}") from exc
        if not isinstance(data, dict):
            raise WorkbenchError(f"config file {path} must hold a mapping of sections")
    for dotted, value in (overrides or {}).items():
        if value is None:
            continue
        node = data
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise WorkbenchError(_describe(exc, source)) from None
