"""The forge, asked through the GitHub CLI (`gh`): whether it can be asked at all, a
pull request's checks, and a fork's workflow runs on a commit. Each call's command
and answer go to the pilot's CI log; what the answers mean is `benchkit.gate.ci`'s."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from benchkit.gate.ci import PR_FIELDS, RUN_FIELDS
from benchkit.workspace.proc import ProcError, capture

GH = "gh"
ASK_S = 120.0  # one question to the forge: gh's own network timeouts are shorter


def gh_problem() -> str | None:
    """Why `gh` cannot be asked about CI here (missing, or not logged in), or None."""
    if shutil.which(GH) is None:
        return (
            "needs gh (the GitHub CLI) on PATH to read the forge's checks: not found "
            "(install it, or put a stand-in first on PATH)"
        )
    try:
        capture([GH, "auth", "status"], timeout_s=ASK_S)
    except ProcError as exc:
        said = (exc.stderr or exc.stdout or "").strip().splitlines()
        return f"gh is not logged in (gh auth status: {said[0] if said else exc}): gh auth login"
    except OSError as exc:
        return f"gh cannot run: {exc}"
    return None


class Forge:
    """Questions to the forge for one pilot, each logged to `log`."""

    def __init__(self, log: Path) -> None:
        self.log = log

    def _ask(self, *args: str) -> tuple[str, str | None]:
        """gh's stdout, and its error (None when it succeeded)."""
        argv = [GH, *args]
        try:
            out, error = capture(argv, timeout_s=ASK_S), None
        except ProcError as exc:
            out, error = exc.stdout, (exc.stderr or str(exc)).strip()
        except OSError as exc:
            out, error = "", str(exc)
        with self.log.open("a") as log:
            log.write(f"$ {' '.join(argv)}\n{out}" + (f"\n[error] {error}\n" if error else ""))
        return out, error

    def _json(self, *args: str) -> object:
        """gh's answer as JSON; None when it failed or is not JSON."""
        out, error = self._ask(*args)
        try:
            return json.loads(out) if error is None else None
        except json.JSONDecodeError:
            return None

    def pr_checks(self, url: str) -> tuple[str, str | None]:
        return self._ask("pr", "checks", url, "--json", PR_FIELDS)

    def cross_repository(self, url: str) -> bool | None:
        """Whether the pull request comes from a fork; None when gh cannot tell."""
        found = self._json("pr", "view", url, "--json", "isCrossRepository")
        crossing = found.get("isCrossRepository") if isinstance(found, dict) else None
        return crossing if isinstance(crossing, bool) else None

    def fork_runs(self, repository: str, sha: str) -> tuple[str, str | None]:
        return self._ask("run", "list", "-R", repository, "--commit", sha, "--json", RUN_FIELDS)

    def workflow_states(self, repository: str) -> list[str] | None:
        """The states of the repository's workflows (`active`, `disabled_fork`, ...);
        None when gh cannot tell."""
        found = self._json("workflow", "list", "-R", repository, "--all", "--json", "state")
        if not isinstance(found, list):
            return None
        return [str(w.get("state")) for w in found if isinstance(w, dict)]
