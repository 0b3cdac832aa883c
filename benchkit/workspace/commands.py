"""Commands as a bench or arm file writes them: placeholders filled in, and the
allow-listed environment they run with."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

ALLOWED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM")


def substitute(
    command: str | Sequence[str], values: Mapping[str, str | Sequence[str]]
) -> str | list[str]:
    """Put values into `{name}` placeholders: shell-quoted in a string command; as
    whole arguments in a list (a list value becomes several arguments)."""
    if isinstance(command, str):
        for name, value in values.items():
            quoted = shlex.quote(value) if isinstance(value, str) else shlex.join(list(value))
            command = command.replace("{" + name + "}", quoted)
        return command
    argv: list[str] = []
    for arg in command:
        whole = values.get(arg[1:-1]) if arg.startswith("{") and arg.endswith("}") else None
        if whole is not None and not isinstance(whole, str):
            argv.extend(whole)
            continue
        for name, value in values.items():
            if isinstance(value, str):
                arg = arg.replace("{" + name + "}", value)
        argv.append(arg)
    return argv


def own_bin() -> Path | None:
    """The `bin` folder of the virtualenv benchkit itself runs in, if it runs in one."""
    return Path(sys.prefix) / "bin" if sys.prefix != sys.base_prefix else None


def caller_path() -> list[str]:
    """The caller's PATH, without benchkit's own virtualenv."""
    own = own_bin()
    folders = os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
    return [f for f in folders if f and (own is None or Path(f) != own)]


def allowed_env(names: Sequence[str] = ALLOWED_ENV) -> dict[str, str]:
    """The allow-listed part of the caller's environment, with a UTF-8 locale by
    default, and its PATH without benchkit's own virtualenv."""
    env = {k: os.environ[k] for k in names if k in os.environ}
    env["PATH"] = os.pathsep.join(caller_path())
    env.setdefault("LANG", "C.UTF-8")
    return env
