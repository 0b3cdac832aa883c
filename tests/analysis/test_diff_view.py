"""The human's change and the arm's, file by file (`benchkit.analysis.diff_view`)."""

from __future__ import annotations

from benchkit.analysis.diff_view import FOLD_LINES, Line, side_by_side

HUMAN = (
    "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n A = 0\n-X = 1\n+X = 2\n B = 0\n"
    "--- a/notes.md\n+++ b/notes.md\n@@ -1 +1 @@\n-old\n+new\n"
)
ARM = (
    "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n A = 0\n-X = 1\n+X = 3\n B = 0\n"
    "@@ -9,1 +9,1 @@\n-Y = 1\n+Y = 3\n"
    "--- a/test_m.py\n+++ b/test_m.py\n@@ -1 +1,2 @@\n import m\n+assert m.X\n"
)
SITE = {"site": 0, "file": "m.py", "kind": "lines", "start": 2, "length": 1}


def test_each_file_side_by_side_the_one_sided_first_each_hunk_labelled() -> None:
    files = side_by_side([{**SITE, "covered": True, "matched": False}], HUMAN, ARM)
    assert [(f.path, f.touched_by) for f in files] == [
        ("notes.md", "the human only"),
        ("test_m.py", "the arm only"),
        ("m.py", "both"),
    ]
    m = files[-1]
    [human] = m.human
    assert (human.first, human.last, human.label, human.tone) == (
        1,
        3,
        "site 0: covered",
        "covered",
    )
    assert human.lines == (
        Line("context", 1, "A = 0"),
        Line("removed", 2, "X = 1"),
        Line("added", None, "X = 2"),
        Line("context", 3, "B = 0"),
    )
    assert [(h.first, h.label, h.tone) for h in m.arm] == [
        (1, "site 0", "site"),
        (9, "touches no site", "other"),
    ]
    assert files[0].human[0].label == "no site (a file the sites leave out)"
    assert not any(f.folded for f in files)


def test_a_missed_site_an_unreadable_patch_and_a_long_file() -> None:
    [m] = side_by_side(
        [{**SITE, "covered": False, "matched": False}], HUMAN.split("--- a/notes")[0], "not a patch"
    )
    assert (m.touched_by, m.human[0].tone, m.arm) == ("the human only", "missed", ())
    long = f"--- a/big.py\n+++ b/big.py\n@@ -1,0 +1,{FOLD_LINES + 1} @@\n"
    long += "".join(f"+line {i}\n" for i in range(FOLD_LINES + 1))
    [big] = side_by_side([], None, long)
    assert big.folded and big.size == FOLD_LINES + 1
