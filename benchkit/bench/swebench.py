"""SWE-bench's files: task instances and predictions, in every shape they come in.

Instances (SWE-bench, Lite, Verified, Multilingual, SWE-Gym, SWE-bench-Live,
SWE-smith) as a JSON list, JSON Lines, a JSON object keyed by instance id, or a
Hugging Face export in Parquet; `FAIL_TO_PASS` and `PASS_TO_PASS` as JSON-encoded
strings or as lists. Predictions (`instance_id`, `model_name_or_path`,
`model_patch`) as JSON Lines, a JSON list or a JSON object keyed by instance id. A
bad file is one line naming the file, the instance (or its line) and the field.

An environments file says what each (repository, version) of the instances runs
with, as a bench's `[environment]` does (SWE-bench's per-version specs, without
Docker): a TOML or JSON table of tables, `["OWNER/NAME"."VERSION"]`, or a list of
tables `[[environment]]` each with its `repo` and `version`.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from benchkit.bench.bench_file import Environment
from benchkit.bench.files import one_line
from benchkit.bench.names import NAME
from benchkit.errors import BenchError, UsageError


class Keyed(BaseModel):
    """A row of SWE-bench's files: one instance's."""

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    instance_id: Annotated[str, Field(min_length=1)]


Row = TypeVar("Row", bound=Keyed)


def _tests(value: object) -> object:
    """A list of test ids, or the JSON string of one (SWE-bench, Lite, Verified)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ValueError("neither a list of test ids nor the JSON text of one") from None
    if hasattr(value, "tolist"):  # a Parquet list read as an array
        value = value.tolist()
    return value


def _text(value: object) -> object:
    """A version as some sets give it, a number (`0.12`, `3`): its text."""
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def _owner_name(value: str) -> str:
    if not re.match(r"^[^/\s]+/[^/\s]+$", value):
        raise ValueError(f"{value!r} is not OWNER/NAME")
    return value


def _given(value: str) -> str:
    if not value.strip():
        raise ValueError("is empty")
    return value


Tests = Annotated[list[str], BeforeValidator(_tests)]


class Instance(Keyed):
    """One task instance; keys SWE-bench does not define are left unread."""

    instance_id: Annotated[str, Field(pattern=NAME)]
    repo: Annotated[str, AfterValidator(_owner_name)]
    base_commit: Annotated[str, AfterValidator(_given)]
    patch: Annotated[str, AfterValidator(_given)]
    test_patch: Annotated[str, AfterValidator(_given)]
    problem_statement: Annotated[str, AfterValidator(_given)]
    hints_text: str | None = ""
    created_at: Annotated[str, BeforeValidator(str)] = ""
    version: Annotated[str, BeforeValidator(_text)] = ""
    FAIL_TO_PASS: Tests
    PASS_TO_PASS: Tests
    environment_setup_commit: str | None = None


class Prediction(Keyed):
    """One model's patch for one instance; an empty or null patch is `empty_patch`."""

    model_name_or_path: Annotated[str, Field(min_length=1)]
    model_patch: str | None = None

    @property
    def empty(self) -> bool:
        return not (self.model_patch or "").strip()


def _rows(path: Path, error: type[BenchError] | type[UsageError]) -> Iterator[tuple[str, Any]]:
    """Each row of the file with where it is (`line 3`, `item 2`, or its key)."""
    try:
        if path.suffix == ".parquet":
            yield from _parquet_rows(path)
            return
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(path, "", "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(path, "", f"cannot read: {exc}") from None
    stripped = text.lstrip()
    if not stripped:
        raise error(path, "", "the file is empty")
    if stripped[0] in "[{":
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = None  # JSON Lines, or broken: read line by line
        if isinstance(whole, list):
            yield from ((f"item {n}", row) for n, row in enumerate(whole, 1))
            return
        if isinstance(whole, dict):
            yield from _keyed(whole)
            return
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield f"line {n}", json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(path, f"line {n}", f"not JSON: {exc.msg} (column {exc.colno})") from None


def _keyed(whole: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """A JSON object keyed by instance id: one row whose `instance_id` is the key (or
    a single row, an object that is one instance or prediction itself)."""
    if "instance_id" in whole:
        yield "item 1", whole
        return
    for key, row in whole.items():
        yield key, ({"instance_id": key, **row} if isinstance(row, dict) else row)


def _parquet_rows(path: Path) -> Iterator[tuple[str, Any]]:
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(path).to_pylist()
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise BenchError(path, "", f"not a Parquet file: {exc}") from None
    yield from ((f"row {n}", row) for n, row in enumerate(rows, 1))


def _read(path: Path, model: type[Row], error: type[BenchError] | type[UsageError]) -> list[Row]:
    found: list[Row] = []
    seen: set[str] = set()
    for where, raw in _rows(path, error):
        if not isinstance(raw, dict):
            raise error(path, where, "not an object")
        named = raw.get("instance_id")
        label = named if isinstance(named, str) and named else where
        try:
            row = model.model_validate(raw)
        except ValidationError as exc:
            field, message = one_line(exc)
            raise error(path, f"{label}: {field}", message) from None
        key = row.instance_id
        if key in seen:
            raise error(path, f"{label}: instance_id", "given twice")
        seen.add(key)
        found.append(row)
    if not found:
        raise error(path, "", "holds no row")
    return found


def read_instances(path: Path) -> list[Instance]:
    """The task instances of a file, in its order; a bad one is a `BenchError`."""
    return _read(path, Instance, BenchError)


def read_predictions(path: Path) -> list[Prediction]:
    """The predictions of a file, in its order; a bad one is a `UsageError`."""
    return _read(path, Prediction, UsageError)


EnvironmentKey = tuple[str, str]  # (OWNER/NAME, version)


def read_environments(path: Path) -> dict[EnvironmentKey, Environment]:
    """What each (repository, version) runs with; a bad file is a `BenchError`."""
    raw = _table(path)
    listed = raw.get("environment")
    entries: list[tuple[str, str, Any]] = []
    if isinstance(listed, list):
        for n, entry in enumerate(listed, 1):
            if not isinstance(entry, dict) or not {"repo", "version"} <= entry.keys():
                raise BenchError(path, f"environment.{n}", "give its repo and version")
            rest = {k: v for k, v in entry.items() if k not in ("repo", "version")}
            entries.append((str(entry["repo"]), str(_text(entry["version"])), rest))
    else:
        for repo, versions in raw.items():
            if not isinstance(versions, dict):
                raise BenchError(path, repo, 'not a table of versions: ["OWNER/NAME"."VERSION"]')
            entries += [(repo, version, entry) for version, entry in versions.items()]
    found: dict[EnvironmentKey, Environment] = {}
    for repo, version, entry in entries:
        try:
            found[repo, version] = Environment.model_validate(entry)
        except ValidationError as exc:
            field, message = one_line(exc)
            raise BenchError(path, f"{repo}.{version}.{field}", message) from None
    if not found:
        raise BenchError(path, "", "names no environment")
    return found


def _table(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BenchError(path, "", "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BenchError(path, "", f"cannot read: {exc}") from None
    if path.suffix == ".json" or text.lstrip().startswith("{"):
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BenchError(path, "", f"not valid JSON: {exc}") from None
    else:
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise BenchError(path, "", f"not valid TOML: {exc}") from None
    if not isinstance(raw, dict):
        raise BenchError(path, "", "not a table")
    return raw
