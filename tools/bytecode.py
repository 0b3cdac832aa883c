"""Byte-compile a fresh virtualenv for `make install`: `python tools/bytecode.py REGEX
FOLDER...` writes the `.pyc` of every `.py` file under the folders but those whose path
matches REGEX.

`compileall -j 0` does the same work in twice the time here: it walks into the folders
it leaves out, checks each file's `.pyc` first, and hands the files to its workers a few
at a time. This prunes the walk, compiles without checking (a fresh install has no
`.pyc` to keep), and gives each process a share of the files at once. A file that does
not compile is said on stderr and left to compile where it is imported; the exit
status is then 1."""

from __future__ import annotations

import os
import py_compile
import re
import sys
from concurrent.futures import ProcessPoolExecutor

SHARES_A_CORE = 4
"""Shares of the files a worker gets, so that one slow share does not leave a core idle."""


def sources(folders: list[str], left_out: re.Pattern[str]) -> list[str]:
    """The `.py` files under `folders`, but under a folder or at a path `left_out` matches
    (a folder's path is matched with its trailing `/`)."""
    found = []
    for folder in folders:
        for root, dirs, names in os.walk(folder):
            dirs[:] = [
                d
                for d in dirs
                if d != "__pycache__" and not left_out.search(os.path.join(root, d) + "/")
            ]
            paths = (os.path.join(root, name) for name in names if name.endswith(".py"))
            found += [path for path in paths if not left_out.search(path)]
    return found


def compiled(paths: list[str]) -> list[str]:
    """Compile each file beside its source, as an import would; what failed, said."""
    failed = []
    for path in paths:
        try:
            py_compile.compile(path, doraise=True, quiet=1)
        except (py_compile.PyCompileError, OSError, ValueError) as exc:
            failed.append(f"{path}: {exc}")
    return failed


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python tools/bytecode.py REGEX FOLDER...", file=sys.stderr)
        return 2
    paths = sources(argv[1:], re.compile(argv[0]))
    cores = os.cpu_count() or 1
    shares = [paths[i :: cores * SHARES_A_CORE] for i in range(cores * SHARES_A_CORE)]
    with ProcessPoolExecutor(cores) as pool:
        failed = [line for lines in pool.map(compiled, shares) for line in lines]
    for line in failed:
        print(f"bytecode: {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
