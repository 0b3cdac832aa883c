"""Node benches as they are in the wild: a repository locked by npm, pnpm, yarn 1 or
yarn 4 builds its environment once with its own manager; an install the registry
refuses says what it refused; a pnpm workspace of two packages installs once at its
root and gates with its packages' reports merged. The packages come from the npm
registry on first use, in a cache of each test's own."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

import benchkit
from tests.conftest import ROOT, a_cache, make_repo, with_checks_at_base
from tests.helpers import environment_log, needs_node, reused

pytestmark = [pytest.mark.node, needs_node]


MANAGERS = ROOT / "tests" / "fixtures" / "node-managers"
MANAGED_BENCH = (MANAGERS / "bench.toml.in").read_text()  # {name}, {repo}


@pytest.mark.parametrize("name", ["npm", "pnpm", "yarn", "yarn-berry"])
def test_a_pnpm_or_yarn_repository_builds_its_environment_once_with_its_manager(
    name: str,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The manager is the lock file's; the tool itself comes from the registry, once
    a version, into benchkit's cache, its version in the environment's key and log."""
    monkeypatch.setenv("BENCHKIT_CACHE", str(a_cache(tmp_path_factory, None)))
    base = {
        str(f.relative_to(MANAGERS / name / "base")): f.read_text()
        for f in (MANAGERS / name / "base").rglob("*")
        if f.is_file()
    }
    index = base["index.js"].replace("x * 2", "Number(x) * 2")
    repo = tmp_path / "repo"
    make_repo(repo, base, {"index.js": index}, "human")
    bench = tmp_path / "bench" / "bench.toml"
    bench.parent.mkdir()
    bench.write_text(MANAGED_BENCH.format(name=name, repo=repo))
    runs = benchkit.pilot(str(bench), arm=["human", "noop"], store=tmp_path / "store")
    assert [(r.status, r.after("test").status) for r in runs] == [("ok", "ok"), ("ok", "ok")]  # type: ignore[union-attr]
    assert runs[0].environment is not None and runs[0].environment.packages == ("is-number==7.0.0",)
    manager = name.removesuffix("-berry")
    built, again = (environment_log(r.artifacts) for r in runs)
    verb = "ci" if manager == "npm" else "install"
    installed = f": {manager} {verb} with {manager} "
    assert installed in built
    # built once, then the second pilot's is the cache's, with no install of its own
    key = runs[0].environment.key
    assert again.startswith(reused(key)) and installed not in again, again


def test_an_install_the_registry_refuses_names_what_it_refused(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lock file naming a package version the registry does not have (seen on a real
    repository: `404 Not Found` for a scoped config package since unpublished): the
    run's failure says what npm refused, not its closing `A complete log of this run
    can be found in ...`."""
    monkeypatch.setenv("BENCHKIT_CACHE", str(a_cache(tmp_path_factory, None)))
    base = {
        str(f.relative_to(MANAGERS / "npm" / "base")): f.read_text()
        for f in (MANAGERS / "npm" / "base").rglob("*")
        if f.is_file()
    }
    for name in ("package.json", "package-lock.json"):
        base[name] = base[name].replace('"7.0.0"', '"7.0.99"')
    integrity = re.search(r'"integrity": "(sha512-[^"]+)"', base["package-lock.json"])
    assert integrity is not None  # another one: not in npm's cache either
    base["package-lock.json"] = base["package-lock.json"].replace(
        integrity.group(1), "sha512-" + "A" * 86 + "=="
    )
    repo = tmp_path / "repo"
    make_repo(repo, base, {"index.js": base["index.js"] + "\n"}, "human")
    bench = tmp_path / "bench" / "bench.toml"
    bench.parent.mkdir()
    bench.write_text(MANAGED_BENCH.format(name="npm", repo=repo))
    [run] = benchkit.pilot(str(bench), arm="noop", store=tmp_path / "store")
    assert (run.status, run.failure_kind) == ("failed", "environment")
    detail = run.failure_detail or ""  # seen before: npm's last line, its pointer to a log
    assert (
        "npm ci exited 1: npm error notarget No matching version found for is-number@7.0.99"
        in detail
    )
    assert "A complete log" not in (run.failure_detail or "")


WORKSPACE = ROOT / "tests" / "fixtures" / "node-workspace"


def test_a_pnpm_workspace_installs_once_at_its_root_and_merges_its_packages_reports(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two packages (calc, and cart that depends on it by `workspace:*`), tested at the
    root by `pnpm -r run test`, each writing its own report: merged, each test named
    from the root; cart's flaky file rerun alone by vitest in cart's folder; cart's
    vitest.config.mjs loads (vite writes into cart's own node_modules); the cached
    node_modules, the root's and each package's, as built after every pilot. The same
    figures in bubblewrap (where it is) and without a sandbox (hard-linked copies)."""
    monkeypatch.setenv("BENCHKIT_CACHE", str(a_cache(tmp_path_factory, None)))
    agent = f"replay:{WORKSPACE / 'patches' / 'agent.patch'}"
    sandbox = "none" if shutil.which("bwrap") is None else "bwrap"
    first = benchkit.pilot(
        str(WORKSPACE), arm=["human", "noop", agent], store=tmp_path / "s", sandbox=sandbox
    )
    [env] = [e for e in (Path(os.environ["BENCHKIT_CACHE"]) / "envs").iterdir() if e.is_dir()]
    assert sorted(str(p.relative_to(env)) for p in env.glob("packages/*/node_modules")) == [
        "packages/calc/node_modules",
        "packages/cart/node_modules",
    ]
    built = _digest_env(env)
    # without a sandbox, in a store that has read the checks at base of the first
    other = with_checks_at_base(tmp_path / "c", tmp_path / "s")
    [copied] = benchkit.pilot(str(WORKSPACE), arm=agent, store=other, sandbox="none")
    assert _digest_env(env) == built
    human, noop, bound = first
    assert {r.sandbox for r in first} == {sandbox}
    assert [r.status for r in (*first, copied)] == ["ok"] * 4
    assert [r.gate.verdict for r in (human, noop) if r.gate] == ["pass", "pass"]
    for run in (bound, copied):
        gate = run.gate
        assert gate is not None and gate.verdict == "fail", gate
        assert gate.flaky_files == ("packages/cart/test/clock.test.js",)
        assert gate.regression_files == ("packages/cart/test/cart.test.js",)
        assert gate.regressions == 1
        assert gate.new_failing_files == ("packages/calc/test/round.test.js",)
        after = {(t.case.file, t.case.name) for t in run.tests if t.phase == "after"}
        assert ("packages/calc/test/calc.test.js", "calc > adds") in after  # both reports
        assert ("packages/cart/test/cart.test.js", "cart > counts its items") in after
        reruns = {(t.case.file, t.case.outcome) for t in run.tests if t.phase == "rerun"}
        assert ("packages/cart/test/clock.test.js", "passed") in reruns  # cart's own vitest
        assert ("packages/cart/test/cart.test.js", "failed") in reruns
        assert (run.sites_total, run.sites_covered, run.sites_unrelated) == (3, 3, 1)
    assert (human.sites_covered, noop.sites_covered) == (3, 0)
    logs = [environment_log(r.artifacts) for r in first]
    assert ": pnpm install with pnpm 9." in logs[0]  # installed once, by the first pilot
    assert human.environment is not None
    assert all(log.startswith(reused(human.environment.key)) for log in logs[1:])


def _digest_env(env: Path) -> str:
    """Every path (folders too), link and file content of a cached environment, but
    its last-used stamp."""
    import hashlib

    digest = hashlib.sha256()
    for root, dirs, files in os.walk(env):
        dirs.sort()
        for name in sorted(dirs + files):
            path = Path(root) / name
            if name == ".last-used":
                continue
            digest.update(str(path.relative_to(env)).encode())
            if path.is_symlink():
                digest.update(os.readlink(path).encode())
            elif path.is_file():
                digest.update(path.read_bytes())
    return digest.hexdigest()
