"""A bench's repository: the commits benchkit makes on base (a human patch, a test
patch) outlive the mirror's next fetch, and a planning fetches each mirror once."""

from __future__ import annotations

from pathlib import Path

from benchkit.bench.bench_file import load_bench
from benchkit.workspace.git import git
from benchkit.workspace.repository import mirror_repository, prepare_repository
from tests.conftest import make_repo

BENCH = """\
name = "patched"
instruction = "x"
[repo]
git = "{repo}"
base = "main"
[human]
patch = "human.patch"
[[checks]]
name = "test"
command = "true"
[tests]
report = "r.xml"
runner = "pytest"
test_patch = "test.patch"
"""


def test_benchkits_commits_on_base_outlive_the_mirrors_next_fetch(tmp_path: Path) -> None:
    """The mirror's fetch once pruned benchkit's refs (`refs/benchkit/*`, not on the
    origin): every planning committed each patch again."""
    repo = tmp_path / "repo"
    make_repo(
        repo,
        {"a.py": "A = 1\n", "test_a.py": "def test_a():\n    pass\n"},
        {"README": "x\n"},
        "unused",
    )
    folder = tmp_path / "bench"
    folder.mkdir()
    (folder / "human.patch").write_text("--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-A = 1\n+A = 2\n")
    (folder / "test.patch").write_text(
        "--- a/test_a.py\n+++ b/test_a.py\n@@ -1,2 +1,2 @@\n"
        " def test_a():\n-    pass\n+    assert True\n"
    )
    (folder / "bench.toml").write_text(BENCH.format(repo=repo))
    bench = load_bench(folder / "bench.toml")
    first = prepare_repository(bench)
    refs = git(
        "for-each-ref", "--format=%(refname) %(objectname)", "refs/benchkit", cwd=first.mirror
    )
    assert len(refs.splitlines()) == 2  # the human reference's and the test patch's
    assert mirror_repository(repo) == first.mirror  # fetched afresh: benchkit's refs kept
    assert (
        git("for-each-ref", "--format=%(refname) %(objectname)", "refs/benchkit", cwd=first.mirror)
        == refs
    )
    fetched: dict[str, Path] = {}
    again = prepare_repository(bench, fetched)
    assert (
        git("for-each-ref", "--format=%(refname) %(objectname)", "refs/benchkit", cwd=again.mirror)
        == refs
    )
    assert (again.human_sha, again.tests_sha) == (first.human_sha, first.tests_sha)
    assert again.tests_sha is not None and again.checked_base == again.tests_sha
    assert list(fetched.values()) == [again.mirror]  # one mirror, fetched once a planning
