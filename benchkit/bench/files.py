"""Reading the TOML files a user writes, validated by pydantic models.

A bad file is one line naming the file and the field, raised as the error the caller
names: `demo/bench.toml: checks.2.timeout: Input should be a valid number`.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from benchkit.errors import BenchkitError

FileModel = TypeVar("FileModel", bound=BaseModel)


LONGEST_ARGUMENT = 131_071
"""Bytes one argument to a program may hold (Linux's MAX_ARG_STRLEN, less its NUL)."""


def _argument(text: str) -> str:
    """Text a program is given (an argument, a variable's value): no NUL byte, which
    none can hold, and no longer than one argument may be."""
    if "\0" in text:
        raise ValueError("holds a NUL byte, which no program's argument or variable can")
    size = len(text.encode(errors="surrogateescape"))
    if size > LONGEST_ARGUMENT:
        raise ValueError(
            f"is {size:,} bytes: one argument to a program is at most {LONGEST_ARGUMENT:,}"
        )
    return text


def _runnable(command: str | list[str]) -> str | list[str]:
    if not (command.strip() if isinstance(command, str) else command and command[0].strip()):
        raise ValueError("names no program: give a shell line or a list starting with one")
    for part in [command] if isinstance(command, str) else command:
        _argument(part)
    return command


Command = Annotated[str | list[str], AfterValidator(_runnable)]  # a check's or an arm's
Argument = Annotated[str, AfterValidator(_argument)]  # an instruction, a variable's value
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
EnvName = Annotated[str, Field(pattern=ENV_NAME)]  # no `=`, no NUL: what a program takes
Env = dict[EnvName, Argument]
LONGEST_S = 7 * 24 * 3600.0  # a week: a timeout past it is a slip of the keyboard
# A time in a file: a number (never `true`, never a string), finite, at most a week.
Seconds = Annotated[float, Field(strict=True, allow_inf_nan=False, le=LONGEST_S)]


class Strict(BaseModel):
    """A file's model: unknown keys are errors, values cannot change."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)


def _field(loc: tuple[int | str, ...]) -> str:
    """Where an error is, as a file says it: `env.A=B (its name)` for a table's key."""
    if loc and loc[-1] == "[key]":  # pydantic's word for a table's key, not its value
        return f"{_field(loc[:-1])} (its name)"
    return ".".join(str(part) for part in loc) or "(file)"


SHOWN = 5  # the errors a line names; the rest it counts


def _said(error: Mapping[str, Any]) -> str:
    """One error in a file's words: TOML has arrays, not tuples."""
    if error["type"] == "extra_forbidden":
        return "unknown key"
    if (
        error["type"] == "string_pattern_mismatch"
        and error.get("ctx", {}).get("pattern") == ENV_NAME
    ):
        return "not a variable's name (letters, digits and _, not a digit first)"
    return str(error["msg"]).removeprefix("Value error, ").replace("valid tuple", "valid list")


def one_line(exc: ValidationError) -> tuple[str, str]:
    """The first error's field, and every error (the first `SHOWN`) in one line."""
    errors = exc.errors()
    first, *rest = errors[:SHOWN]
    message = "; ".join([_said(first), *(f"{_field(tuple(e['loc']))}: {_said(e)}" for e in rest)])
    more = f" (and {len(errors) - SHOWN} more)" if len(errors) > SHOWN else ""
    return _field(tuple(first["loc"])), message + more


def _read_toml(path: Path, error: type[BenchkitError]) -> dict[str, object]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(path, "", "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(path, "", f"cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(path, "", f"not valid TOML: {exc}") from None


def validated(model: type[FileModel], path: Path, error: type[BenchkitError]) -> FileModel:
    """A TOML file read and validated, or `error` naming the file and the field."""
    raw = _read_toml(path, error)
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        field, message = one_line(exc)
        raise error(path, field, message) from None
