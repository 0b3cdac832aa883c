"""A bench's lock file: what `benchkit bench validate` found the base and the human
reference really do, K times over, and for which bench and environment.

It lives beside `bench.toml` (`bench.lock.json`); a bundled bench's goes to
`$BENCHKIT_LOCKS/<name>.lock.json` (default `~/.local/share/benchkit/locks`), since
the bundled one may sit in a read-only install. The gate uses its flaky tests only
while it is current: the same bench file, commits and environment.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchkit.bench.bench_file import Bench
from benchkit.bench.find import BUNDLED
from benchkit.errors import BenchError

LOCK_VERSION = 1
LOCK_FILE = "bench.lock.json"


@dataclass(frozen=True, kw_only=True)
class Varied:
    """A test whose outcome varied across the runs of one side."""

    test: str  # FILE::ID
    side: str  # base or human
    failed: int
    runs: int


@dataclass(frozen=True, kw_only=True)
class Lock:
    """What validation found, and what it was run on."""

    bench_digest: str
    base_sha: str
    human_sha: str
    env_key: str
    env_packages_digest: str | None
    reruns: int
    preexisting: tuple[str, ...]  # failing at base in every run
    must_pass: tuple[str, ...]  # proposed: failing at base every run, passing with the human
    added_by_human: tuple[str, ...]  # absent at base, passing with the human every run
    flaky: tuple[Varied, ...] = field(default=())
    # why the task is not one (a SWE-bench instance whose gold patch does not pass its
    # FAIL_TO_PASS every run): an invalid task's runs are no evidence either way
    invalid: str | None = None
    version: int = LOCK_VERSION

    def current(self, digest: str, base_sha: str, human_sha: str, env_key: str) -> bool:
        """Whether it was made of this bench file, these commits and this environment."""
        made_of = (self.bench_digest, self.base_sha, self.human_sha, self.env_key)
        return made_of == (digest, base_sha, human_sha, env_key)

    def flaky_at_base(self) -> frozenset[tuple[str, str]]:
        """(file, id) of the tests whose outcome varied at base."""
        return frozenset(
            (file, test_id)
            for v in self.flaky
            if v.side == "base"
            for file, _, test_id in [v.test.partition("::")]
        )


def bench_digest(bench: Bench) -> str:
    return hashlib.sha256(bench.path.read_bytes()).hexdigest()[:16]


def lock_path(bench: Bench) -> Path:
    """Where the bench's lock file lives: beside it, or, for a bundled bench, in the
    user's folder of locks."""
    if bench.folder.resolve().is_relative_to(BUNDLED.resolve()):
        default = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
        folder = Path(os.environ.get("BENCHKIT_LOCKS") or default / "benchkit" / "locks")
        return folder / f"{bench.name}.lock.json"
    return bench.folder / LOCK_FILE


def to_json(lock: Lock) -> str:
    return json.dumps(asdict(lock), indent=1) + "\n"


def read_lock(path: Path) -> Lock | None:
    """A lock file, or None when there is none; a bad one is a `BenchError`."""
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise BenchError(path, "", f"not a lock file: {exc}") from None
    try:
        return Lock(
            bench_digest=str(raw["bench_digest"]),
            base_sha=str(raw["base_sha"]),
            human_sha=str(raw["human_sha"]),
            env_key=str(raw["env_key"]),
            env_packages_digest=raw["env_packages_digest"],
            reruns=int(raw["reruns"]),
            preexisting=tuple(raw["preexisting"]),
            must_pass=tuple(raw["must_pass"]),
            added_by_human=tuple(raw["added_by_human"]),
            flaky=tuple(Varied(**v) for v in raw["flaky"]),
            invalid=raw.get("invalid"),  # a lock written before it: a valid bench
            version=int(raw["version"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise BenchError(path, str(exc), "not a lock file of this benchkit") from None
