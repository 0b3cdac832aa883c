"""Commands as a bench or arm file writes them: placeholders filled in, and the
allow-listed environment they run with."""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

ALLOWED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM")


PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def fill(template: str, values: Mapping[str, str]) -> str:
    """Each `{name}` of the template replaced by its value, in one pass: a value is
    never read again for placeholders (an instruction saying `{model}` stays so).
    Names without a value stay as written."""
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def words(command: str | Sequence[str]) -> list[str]:
    """A command's words, as the shell splits a string (none, for one it cannot)."""
    return list(command) if not isinstance(command, str) else list(_split(command))


@lru_cache(maxsize=256)
def _split(command: str) -> tuple[str, ...]:
    """A string's words, as the shell splits it: once a string (a check's command, at
    each pilot's key and each run of it)."""
    try:
        return tuple(shlex.split(command))
    except ValueError:
        return ()


def substitute(
    command: str | Sequence[str], values: Mapping[str, str | Sequence[str]]
) -> str | list[str]:
    """Put values into `{name}` placeholders, in one pass: shell-quoted in a string
    command; as whole arguments in a list (a list value becomes several arguments)."""
    if isinstance(command, str):
        quoted = {
            k: shlex.quote(v) if isinstance(v, str) else shlex.join(list(v))
            for k, v in values.items()
        }
        return fill(command, quoted)
    strings = {k: v for k, v in values.items() if isinstance(v, str)}
    argv: list[str] = []
    for arg in command:
        whole = values.get(arg[1:-1]) if arg.startswith("{") and arg.endswith("}") else None
        if whole is not None and not isinstance(whole, str):
            argv.extend(whole)
            continue
        argv.append(fill(arg, strings))
    return argv


def own_bin() -> Path | None:
    """The `bin` folder of the virtualenv benchkit itself runs in, if it runs in one."""
    return Path(sys.prefix) / "bin" if sys.prefix != sys.base_prefix else None


def caller_path() -> list[str]:
    """The caller's PATH, without benchkit's own virtualenv."""
    return list(_without(os.environ.get("PATH", "/usr/bin:/bin"), own_bin()))


@lru_cache(maxsize=8)
def _without(path: str, own: Path | None) -> tuple[str, ...]:
    """The folders of `path` but `own`: once a PATH, though every command asks."""
    folders = path.split(os.pathsep)
    return tuple(f for f in folders if f and (own is None or Path(f) != own))


def allowed_env(names: Sequence[str] = ALLOWED_ENV) -> dict[str, str]:
    """The allow-listed part of the caller's environment, with a UTF-8 locale by
    default, and its PATH without benchkit's own virtualenv."""
    env = {k: os.environ[k] for k in names if k in os.environ}
    env["PATH"] = os.pathsep.join(caller_path())
    env.setdefault("LANG", "C.UTF-8")
    return env
