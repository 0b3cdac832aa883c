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
from tests.conftest import ROOT, a_cache, sh_git, with_checks_at_base
from tests.helpers import benchkit_cli, benchkit_in_process, environment_log, needs_node, reused

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
    # npm ci once, on the first pilot; the others reuse (copy) its node_modules
    rows = benchkit.runs(store).to_dicts()  # in the order they ran
    first, *later = (environment_log(r["artifacts"]) for r in rows)
    assert ": npm ci with npm " in first and len(later) == 3, (first, later)
    assert all(log.startswith(reused(rows[0]["env_key"])) for log in later), later
    assert str(runs["human"]["env_python"]).startswith("node v")
    listed = benchkit_in_process("env", "list", env=demo_node.env).stdout.splitlines()
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
    [run] = benchkit.pilot(
        "demo-node",
        arm=f"replay:{patch}",
        store=with_checks_at_base(tmp_path / "store", demo_node.store),
    )
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
    every verdict `error`), and the cached node_modules is as it was after. The test
    check alone: vite runs there, and the demo's other checks are the tests above's."""
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
        "demo-node",
        arm=f"replay:{patch}",
        checks=["test"],
        store=tmp_path / "store",
        sandbox="bwrap",
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
