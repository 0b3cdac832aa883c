"""Node benches on real npm, tsc, biome, vitest and jest: the bundled demo-node bench,
a jest bench (its JSON report and jest-junit's), `ab` and `probe` on a vitest
repository. The packages come from the npm registry on first use (one npm cache for
the session), pinned by each bench's package-lock.json. Each environment is built once:
the demo-node bench's by its own first pilot (`demo_node`), the jest bench's by its
first test, in the session's shared environments."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

import benchkit
from benchkit.errors import BenchError
from tests.conftest import ROOT, a_cache, make_repo, sh_git
from tests.helpers import benchkit_cli, needs_node

DEMO_NODE = ROOT / "benchkit" / "bundled" / "benches" / "demo-node"
JEST = ROOT / "tests" / "fixtures" / "node-jest"
ARMS = ["human", "noop", "replay:agent-a", "replay:agent-b"]

pytestmark = [pytest.mark.node, needs_node]


@dataclass(frozen=True)
class DemoNode:
    """The demo-node bench's four arms, run once for the module by `benchkit pilot` in a
    cache of their own: its environments are built by these pilots (npm ci on the
    first), then shared with the module's other demo-node tests."""

    store: Path
    environments: Path
    done: subprocess.CompletedProcess[str]
    env: dict[str, str]


@pytest.fixture(scope="module")
def demo_node(tmp_path_factory: pytest.TempPathFactory) -> DemoNode:
    environments = tmp_path_factory.mktemp("demo-node-environments")
    store = tmp_path_factory.mktemp("demo-node") / "store"
    env = {**os.environ, "BENCHKIT_CACHE": str(a_cache(tmp_path_factory, environments))}
    arms = [f"--arm={a}" for a in ARMS]
    done = benchkit_cli("pilot", "--bench", "demo-node", *arms, "--store", str(store), env=env)
    return DemoNode(store=store, environments=environments, done=done, env=env)


def test_the_demo_node_bench_of_four_arms(demo_node: DemoNode) -> None:
    store, done = demo_node.store, demo_node.done
    assert done.returncode == 0, done.stderr
    runs = {r["arm"]: r for r in benchkit.runs(store).to_dicts()}
    human, noop, a, b = (runs[arm] for arm in ARMS)
    # coverage: 17 sites in 4 files; noop none; node_modules never in a diff
    assert (human["sites_total"], human["sites_covered"], human["sites_unrelated"]) == (17, 17, 0)
    assert (noop["sites_covered"], noop["sites_unrelated"]) == (0, 0)
    assert (a["sites_covered"], a["sites_unrelated"]) == (7, 1)
    # every check ran in the bench's own node_modules: typecheck, lint and build pass
    for check in ("install", "typecheck", "lint", "build"):
        assert human[f"{check}_status"] == "ok", check
    assert (human["test_status"], human["test_count"]) == ("fail", 1)  # the known bug
    assert (human["test_verdict"], human["preexisting_files"]) == ("pass", ["test/dates.test.ts"])
    assert (a["test_verdict"], a["flaky_files"]) == ("flaky-pass", ["test/clock.test.ts"])
    assert b["test_verdict"] == "fail"
    assert (b["regression_files"], b["regressions"]) == (["test/tax.test.ts"], 1)
    assert b["new_failing_files"] == ["test/ledger-v2.test.ts"]  # the arm's own, not regressed
    assert (b["typecheck_status"], b["typecheck_count"]) == ("fail", 1)  # tsc: no such module
    tests = benchkit.table("tests", store, arm="replay:agent-b").filter(pl.col("phase") == "after")
    [load] = tests.filter(pl.col("file") == "test/ledger-v2.test.ts").to_dicts()
    assert load["outcome"] == "error" and "Cannot find module" in load["message"]
    assert "regression test/tax.test.ts" in done.stdout
    assert "new failing test file test/ledger-v2.test.ts" in done.stdout
    # npm ci once, on the first pilot; the others copy node_modules
    first, *later = benchkit.runs(store)["environment_s"].to_list()
    assert max(later) < 0.1 * first, (first, later)
    assert str(runs["human"]["env_python"]).startswith("node v")
    listed = benchkit_cli("env", "list", env=demo_node.env).stdout.splitlines()
    assert any(line.startswith("node-") and "  node v" in line for line in listed), listed
    assert not any(line.startswith("node-") and "python" in line for line in listed), listed


def _jest_bench(tmp_path: Path, junit: bool) -> Path:
    """The jest bench, reading jest's JSON report, or jest-junit's JUnit (with files)."""
    bench = tmp_path / ("jest-junit" if junit else "jest-json")
    shutil.copytree(JEST, bench)
    if junit:
        toml = bench / "bench.toml"
        text = toml.read_text().replace(
            "jest --ci --json --outputFile {report} --reporters", "jest --ci --reporters"
        )
        text = text.replace('report = ".jest-report.json"', 'report = ".jest-junit.xml"')
        text = text.replace("[env]\n", '[env]\nJEST_JUNIT_ADD_FILE_ATTRIBUTE = "true"\n')
        toml.write_text(text)
    return bench


@pytest.mark.parametrize("junit", [False, True], ids=["json", "jest-junit"])
def test_jest_catches_the_file_that_fails_to_load_whichever_report(
    tmp_path: Path, junit: bool
) -> None:
    bench = _jest_bench(tmp_path, junit)
    store = tmp_path / "store"
    benchkit.pilot(str(bench), arm=["human", "replay:broken"], store=store)
    rows = {r["arm"]: r for r in benchkit.runs(store).to_dicts()}
    human, broken = rows["human"], rows["replay:broken"]
    assert (human["test_verdict"], human["sites_covered"], human["test_count"]) == ("pass", 1, 0)
    assert broken["test_verdict"] == "fail"
    assert broken["regression_files"] == ["test/sum.test.js"]
    assert broken["new_failing_files"] == ["test/broken.test.js"]  # the arm's own: no regression
    tests = benchkit.table("tests", store, arm="replay:broken").filter(pl.col("phase") == "after")
    [load] = tests.filter(pl.col("file") == "test/broken.test.js").to_dicts()
    assert load["outcome"] == "error" and "Cannot find module '../src/missing'" in load["message"]


def test_a_node_bench_without_its_lock_file_is_one_clear_error(tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    shutil.copytree(JEST, bench)
    (bench / "base" / "package-lock.json").unlink()
    with pytest.raises(
        BenchError,
        match=r"environment: no lock file in the repository at base \(package-lock\.json, "
        r"pnpm-lock\.yaml, yarn\.lock\)",
    ):
        benchkit.pilot(str(bench), arm="noop", store=tmp_path / "store")
    toml = bench / "bench.toml"
    toml.write_text(toml.read_text().replace('kind = "node"', 'kind = "node"\nmanager = "pnpm"'))
    with pytest.raises(BenchError, match=r"environment\.manager: no file pnpm-lock\.yaml"):
        benchkit.pilot(str(bench), arm="noop", store=tmp_path / "store")


def test_ab_and_probe_on_a_vitest_repository(
    demo_node: DemoNode, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    cache = a_cache(tmp_path_factory, demo_node.environments)  # demo-node's, built once
    env = {**os.environ, "BENCHKIT_CACHE": str(cache)}
    repo = tmp_path / "repo"
    shutil.copytree(DEMO_NODE / "base", repo)
    sh_git(repo, "init", "--quiet", "--initial-branch", "main")
    sh_git(repo, "add", "-A")
    sh_git(repo, "commit", "--quiet", "-m", "base")
    sh_git(repo, "checkout", "--quiet", "-b", "change")
    sh_git(repo, "apply", str(DEMO_NODE / "patches" / "agent-b.patch"))
    sh_git(repo, "add", "-A")
    sh_git(repo, "commit", "--quiet", "-m", "change")
    vitest = ["vitest", "run", "--reporter=default", "--reporter=junit", "--outputFile={report}"]
    common = ["--repo", str(repo), "--base", "main", "--head", "change", "--bench", "demo-node"]
    store = ["--store", str(tmp_path / "store")]
    ab = benchkit_cli("ab", *common, *store, "--fail-on-flip", "--", *vitest, env=env)
    assert ab.returncode == 1, ab.stderr  # a test passed at base and fails at head
    assert "| test/tax.test.ts::tax > rounds half a cent up | passed | failed |" in ab.stdout
    assert "| test/ledger-v2.test.ts::test/ledger-v2.test.ts | absent | error |" in ab.stdout
    assert "node v" in ab.stdout  # what ran the tests: the bench's node
    probe = benchkit_cli("probe", *common, *store, "--", *vitest, "test/tax.test.ts", env=env)
    assert probe.returncode == 0, probe.stderr
    assert "| test/tax.test.ts::tax > rounds half a cent up | failed | passed |" in probe.stdout


BROKEN_CONFIG = """\
diff --git a/vitest.config.ts b/vitest.config.ts
new file mode 100644
--- /dev/null
+++ b/vitest.config.ts
@@ -0,0 +1,3 @@
+import { helper } from "./no-such-helper";
+
+export default { test: { setupFiles: [helper] } };
"""


def test_a_vitest_config_that_cannot_load_says_why_the_tests_did_not_run(
    demo_node: DemoNode,
    tmp_path_factory: pytest.TempPathFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An arm that adds a vitest config that cannot load: the reason is vitest's own
    startup error, the config is named as tampering, and the other checks are as at base."""
    monkeypatch.setenv("BENCHKIT_CACHE", str(a_cache(tmp_path_factory, demo_node.environments)))
    patch = tmp_path / "broken-config.patch"
    patch.write_text(BROKEN_CONFIG)
    [run] = benchkit.pilot("demo-node", arm=f"replay:{patch}", store=tmp_path / "store")
    assert run.gate is not None
    [reason] = run.gate.reasons
    assert run.gate.verdict == "fail"
    assert re.fullmatch(  # its column: after the absolute path vitest puts in line 1
        r"tests did not run: vitest exited 1: Error: Build failed with 1 error: "
        r'vitest\.config\.ts:1:\d+: ERROR: Could not resolve "\./no-such-helper" '
        r"\(\.bench/junit\.xml not written\)",
        reason,
    ), reason
    assert run.tampered == (("vitest.config.ts", "added"),)
    assert {c.check: c.status for c in run.checks if c.phase == "after"} == {
        "install": "ok",
        "typecheck": "ok",
        "lint": "ok",
        "test": "fail",
        "build": "ok",
    }


GOOD_CONFIG = """\
diff --git a/vitest.config.mjs b/vitest.config.mjs
new file mode 100644
--- /dev/null
+++ b/vitest.config.mjs
@@ -0,0 +1,3 @@
+import { defineConfig } from "vitest/config";
+
+export default defineConfig({ test: { include: ["test/**/*.test.ts"] } });
"""


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed here")
def test_a_vitest_config_gates_under_the_sandbox_and_leaves_the_cache_as_it_was(
    demo_node: DemoNode,
    tmp_path_factory: pytest.TempPathFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """vite bundles a config file into node_modules/.vite-temp before it loads it: under
    bubblewrap, which binds the cached node_modules read-only, that folder is the
    pilot's own (seen to fail before: `ENOENT: ... mkdir '.../node_modules/.vite-temp'`,
    every verdict `error`), and the cached node_modules is as it was after."""
    monkeypatch.setenv("BENCHKIT_CACHE", str(a_cache(tmp_path_factory, demo_node.environments)))
    patch = tmp_path / "config.patch"
    patch.write_text(GOOD_CONFIG)
    [env] = [
        e
        for e in (Path(os.environ["BENCHKIT_CACHE"]) / "envs").iterdir()
        if e.name.startswith("node-") and e.is_dir()
    ]
    before = _digest(env / "node_modules")
    [run] = benchkit.pilot(
        "demo-node", arm=f"replay:{patch}", store=tmp_path / "store", sandbox="bwrap"
    )
    assert run.sandbox == "bwrap"
    assert run.gate is not None and run.gate.verdict == "pass", run.gate
    assert run.gate.preexisting_files == ("test/dates.test.ts",)
    assert _digest(env / "node_modules") == before


def _digest(tree: Path) -> str:
    """Every path (folders too) and file content of a tree (one that holds vitest)."""
    import hashlib

    assert (tree / "vitest" / "package.json").is_file(), f"{tree}: not a node_modules"
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(tree):
        dirs.sort()
        for name in sorted(dirs + files):
            path = Path(root) / name
            digest.update(str(path.relative_to(tree)).encode())
            if path.is_file() and not path.is_symlink():
                digest.update(path.read_bytes())
    return digest.hexdigest()


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
    first, again = (r.phases["environment"] for r in runs)
    assert again < 0.25 * first, (first, again)  # built once, then bound or copied
    assert runs[0].environment is not None and runs[0].environment.packages == ("is-number==7.0.0",)
    manager = name.removesuffix("-berry")
    log = (Path(runs[0].artifacts) / "logs" / "environment.log").read_text()
    verb = "ci" if manager == "npm" else "install"
    assert f": {manager} {verb} with {manager} " in log


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
    [copied] = benchkit.pilot(str(WORKSPACE), arm=agent, store=tmp_path / "c", sandbox="none")
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
    environment_s = [r.phases["environment"] for r in first]
    assert max(environment_s[1:]) < 0.25 * environment_s[0], environment_s  # installed once
    log = (Path(human.artifacts) / "logs" / "environment.log").read_text()
    assert ": pnpm install with pnpm 9." in log


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
