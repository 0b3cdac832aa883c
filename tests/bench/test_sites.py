"""Coverage of the human reference, on hand-made `git diff -U0` text: data in, data out."""

from __future__ import annotations

from pathlib import Path

import pytest

import benchkit
from benchkit.bench.sites import DiffError, Hunk, human_sites, normalize, parse_diff, score
from tests.conftest import make_repo

BASE = {
    "app.py": [f"line {n}\n" for n in range(1, 21)],
}

HUMAN = """\
diff --git a/app.py b/app.py
index 1111111..2222222 100644
--- a/app.py
+++ b/app.py
@@ -3 +3 @@
-line 3
+LINE three
@@ -7,2 +7 @@
-line 7
-line 8
+lines 7 and 8
@@ -12,0 +12,2 @@
+inserted a
+inserted b
@@ -15 +16,0 @@
-line 15
"""


def test_sites_are_hunks_on_the_old_side() -> None:
    sites = human_sites(parse_diff(HUMAN))
    assert [(s.kind, s.start, s.length) for s in sites] == [
        ("lines", 3, 1),
        ("lines", 7, 2),
        ("insert", 12, 0),  # a pure insertion, anchored after base line 12
        ("lines", 15, 1),  # a removal
    ]
    assert [s.index for s in sites] == [0, 1, 2, 3]


def test_the_human_diff_covers_and_matches_itself() -> None:
    human = parse_diff(HUMAN)
    cov = score(human, human, base_text=BASE)
    assert (cov.total, cov.covered, cov.matched, cov.unrelated) == (4, 4, 4, 0)
    assert cov.files_recall == cov.files_precision == 1.0


def test_an_empty_arm_diff_covers_nothing() -> None:
    cov = score(parse_diff(HUMAN), parse_diff(""), base_text=BASE)
    assert (cov.total, cov.covered, cov.matched, cov.unrelated) == (4, 0, 0, 0)
    assert cov.files_recall == 0.0
    assert cov.files_precision is None  # the arm touched no file: no precision at all


def test_an_empty_human_diff_has_no_sites() -> None:
    cov = score(parse_diff(""), parse_diff(HUMAN), base_text=BASE)
    assert cov.total == 0
    assert cov.unrelated == 4
    assert cov.files_recall is None
    assert cov.files_precision == 0.0


def test_covered_but_not_matched_and_whitespace_does_not_matter() -> None:
    arm = parse_diff(
        """\
diff --git a/app.py b/app.py
--- a/app.py
+++ b/app.py
@@ -3 +3 @@
-line 3
+  LINE   three\t
@@ -8 +8 @@
-line 8
+something else
"""
    )
    cov = score(parse_diff(HUMAN), arm, base_text=BASE)
    by_start = {s.site.start: s for s in cov.sites}
    assert by_start[3].covered and by_start[3].matched  # same text up to whitespace
    assert by_start[7].covered and not by_start[7].matched  # touched line 8 of 7..8
    assert not by_start[12].covered
    assert not by_start[15].covered
    assert cov.unrelated == 0


def test_unrelated_hunks_touch_no_site() -> None:
    arm = parse_diff(
        """\
diff --git a/app.py b/app.py
--- a/app.py
+++ b/app.py
@@ -1 +1 @@
-line 1
+first
@@ -19,0 +20 @@
+appended
diff --git a/other.py b/other.py
--- a/other.py
+++ b/other.py
@@ -4 +4 @@
-x = 1
+x = 2
"""
    )
    cov = score(parse_diff(HUMAN), arm, base_text=BASE)
    assert cov.covered == 0
    assert cov.unrelated == 3
    assert cov.files_recall == 1.0
    assert cov.files_precision == 0.5


def test_insertion_covered_only_at_the_same_anchor() -> None:
    same = parse_diff("--- a/app.py\n+++ b/app.py\n@@ -12,0 +13,2 @@\n+inserted a\n+inserted b\n")
    elsewhere = parse_diff("--- a/app.py\n+++ b/app.py\n@@ -10,0 +11 @@\n+inserted a\n")
    human = parse_diff(HUMAN)
    hit = score(human, same, base_text=BASE).sites[2]
    miss = score(human, elsewhere, base_text=BASE).sites[2]
    assert hit.covered and hit.matched
    assert not miss.covered


def test_an_arm_replacing_the_lines_around_an_anchor_covers_it() -> None:
    # The arm rewrote line 13 and put the same two lines before it: one hunk -13 +13,3.
    arm = parse_diff(
        "--- a/app.py\n+++ b/app.py\n@@ -13 +13,3 @@\n-line 13\n"
        "+inserted a\n+inserted b\n+line 13\n"
    )
    site = score(parse_diff(HUMAN), arm, base_text=BASE).sites[2]
    assert site.covered
    assert site.matched  # over base lines 13..13 both leave: inserted a, inserted b, line 13


def test_matching_across_merged_hunks_reads_the_base_text() -> None:
    # The arm's single hunk spans sites 3 and 7..8; matching compares base lines 3..8.
    arm_text = ["LINE three\n", "line 4\n", "line 5\n", "line 6\n", "lines 7 and 8\n"]
    arm = parse_diff(
        "--- a/app.py\n+++ b/app.py\n@@ -3,6 +3,5 @@\n"
        + "".join(f"-line {n}\n" for n in range(3, 9))
        + "".join("+" + t for t in arm_text)
    )
    cov = score(parse_diff(HUMAN), arm, base_text=BASE)
    assert [s.matched for s in cov.sites[:2]] == [True, True]
    without_base = score(parse_diff(HUMAN), arm)
    assert [s.covered for s in without_base.sites[:2]] == [True, True]
    assert [s.matched for s in without_base.sites[:2]] == [False, False]


RENAME_HUMAN = """\
diff --git a/old_name.py b/new_name.py
similarity index 90%
rename from old_name.py
rename to new_name.py
index 3333333..4444444 100644
--- a/old_name.py
+++ b/new_name.py
@@ -2 +2 @@
-VALUE = 1
+VALUE = 2
diff --git a/moved.py b/pkg/moved.py
similarity index 100%
rename from moved.py
rename to pkg/moved.py
"""


def test_renames_are_keyed_by_the_base_path() -> None:
    human = parse_diff(RENAME_HUMAN)
    assert [(c.old_path, c.new_path) for c in human] == [
        ("old_name.py", "new_name.py"),
        ("moved.py", "pkg/moved.py"),
    ]
    sites = human_sites(human)
    assert [(s.file, s.kind) for s in sites] == [("old_name.py", "lines"), ("moved.py", "rename")]
    # The arm edits the old file in place without renaming it: line site covered.
    arm = parse_diff("--- a/old_name.py\n+++ b/old_name.py\n@@ -2 +2 @@\n-VALUE = 1\n+VALUE = 2\n")
    cov = score(human, arm)
    assert [(s.covered, s.matched) for s in cov.sites] == [(True, True), (False, False)]
    # The arm makes the same pure rename: covered and matched.
    cov = score(human, human)
    assert (cov.covered, cov.matched, cov.unrelated) == (2, 2, 0)


def test_a_rename_to_another_place_covers_but_does_not_match() -> None:
    human = parse_diff(RENAME_HUMAN)
    arm = parse_diff(
        "diff --git a/moved.py b/lib/moved.py\nsimilarity index 100%\n"
        "rename from moved.py\nrename to lib/moved.py\n"
    )
    site = score(human, arm).sites[1]
    assert site.covered and not site.matched


DELETE_AND_CREATE = """\
diff --git a/gone.py b/gone.py
deleted file mode 100644
index 5555555..0000000
--- a/gone.py
+++ /dev/null
@@ -1,2 +0,0 @@
-a = 1
-b = 2
diff --git a/fresh.py b/fresh.py
new file mode 100644
index 0000000..6666666
--- /dev/null
+++ b/fresh.py
@@ -0,0 +1,2 @@
+def fresh():
+    return True
"""


def test_a_deleted_file_and_a_new_file() -> None:
    human = parse_diff(DELETE_AND_CREATE)
    assert [(c.old_path, c.new_path) for c in human] == [("gone.py", None), (None, "fresh.py")]
    sites = human_sites(human)
    assert [(s.file, s.kind, s.start, s.length) for s in sites] == [
        ("gone.py", "lines", 1, 2),
        ("fresh.py", "insert", 0, 0),
    ]
    cov = score(human, human)
    assert (cov.covered, cov.matched) == (2, 2)
    # An arm that only creates the file, with other text: covered, not matched.
    arm = parse_diff("--- /dev/null\n+++ b/fresh.py\n@@ -0,0 +1 @@\n+fresh = None\n")
    cov = score(human, arm)
    assert [(s.covered, s.matched) for s in cov.sites] == [(False, False), (True, False)]


CRLF_HUMAN = (
    "diff --git a/win.txt b/win.txt\n"
    "--- a/win.txt\n"
    "+++ b/win.txt\n"
    "@@ -2 +2 @@\n"
    "-second\r\n"
    "+SECOND\r\n"
)


def test_crlf_line_ends() -> None:
    human = parse_diff(CRLF_HUMAN)
    assert [(s.file, s.start, s.length) for s in human_sites(human)] == [("win.txt", 2, 1)]
    lf_arm = parse_diff("--- a/win.txt\n+++ b/win.txt\n@@ -2 +2 @@\n-second\n+SECOND\n")
    cov = score(human, lf_arm)
    assert (cov.covered, cov.matched) == (1, 1)  # line ends are whitespace


BINARY = """\
diff --git a/logo.png b/logo.png
index 7777777..8888888 100644
Binary files a/logo.png and b/logo.png differ
"""


def test_a_binary_file_is_one_site_matched_by_its_blob() -> None:
    human = parse_diff(BINARY)
    assert human[0].binary
    assert [(s.file, s.kind) for s in human_sites(human)] == [("logo.png", "binary")]
    same = score(human, human)
    assert (same.covered, same.matched) == (1, 1)
    other = parse_diff(BINARY.replace("8888888", "9999999"))
    cov = score(human, other)
    assert (cov.covered, cov.matched) == (1, 0)


def test_excluded_globs_leave_files_out_on_both_sides() -> None:
    diff = HUMAN + DELETE_AND_CREATE.replace("fresh.py", "tests/test_fresh.py")
    human = parse_diff(diff)
    assert len(human_sites(human)) == 6
    cov = score(human, human, exclude=["tests/*", "gone.py"], base_text=BASE)
    assert cov.total == 4
    assert {s.site.file for s in cov.sites} == {"app.py"}
    assert cov.unrelated == 0


def test_hunk_touching_rules() -> None:
    block = Hunk(start=5, length=3, new_lines=())  # base lines 5..7
    assert block.touches(Hunk(start=7, length=1, new_lines=()))
    assert not block.touches(Hunk(start=8, length=1, new_lines=()))
    # An insertion touches a block at its edges and inside it.
    assert [block.touches(Hunk(start=k, length=0, new_lines=())) for k in range(2, 10)] == [
        False,
        False,
        True,
        True,
        True,
        True,
        False,
        False,
    ]
    assert Hunk(start=3, length=0, new_lines=()).touches(Hunk(start=3, length=0, new_lines=()))


def test_normalize_drops_every_space() -> None:
    assert normalize(["f(a, b)\r\n", "  return  x\n"]) == normalize(["f(a,b)", "return x"])


def test_garbage_is_a_diff_error() -> None:
    with pytest.raises(DiffError):
        parse_diff("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n-only one line\n")


def test_names_git_quotes_are_read_as_they_are(tmp_path: Path) -> None:
    names = ["ünï.txt", "tab\tname.txt", 'q"uote.txt', "skip-ü.txt"]
    repo = tmp_path / "repo"
    make_repo(repo, dict.fromkeys(names, "x\n"), dict.fromkeys(names, "y\n"), "human")
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "bench.toml").write_text(
        f'name = "quoted"\ninstruction = "x"\n[repo]\ngit = "{repo}"\nbase = "main"\n'
        '[human]\nref = "human"\n[sites]\nexclude = ["skip-*"]\n'
    )
    [run] = benchkit.pilot(str(bench), arm="human", store=tmp_path / "store")
    files = sorted(benchkit.table("sites", tmp_path / "store")["file"])
    assert files == sorted(names[:3])  # unquoted, and the glob saw the real name
    assert (run.sites_total, run.sites_covered, run.sites_matched) == (3, 3, 3)
