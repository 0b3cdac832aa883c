"""A Node workspace's packages, by its pnpm-workspace.yaml or its package.json."""

from __future__ import annotations

import pytest

from benchkit.workspace.monorepo import (
    WorkspaceError,
    package_folders,
    package_globs,
)

PATHS = [
    "package.json",
    "packages/calc/package.json",
    "packages/calc/src/index.js",
    "packages/cart/package.json",
    "packages/cart/test/fixtures/app/package.json",  # a fixture, not a package
    "packages/notes.md",
    "apps/web/package.json",
    "apps/web/node_modules/x/package.json",
    "tools/deep/lint/package.json",
]


@pytest.mark.parametrize(
    ("files", "globs"),
    [
        ({"package.json": "{}"}, ()),
        ({"package.json": '{"workspaces": ["packages/*"]}'}, ("packages/*",)),
        ({"package.json": '{"workspaces": {"packages": ["apps/*"]}}'}, ("apps/*",)),  # yarn's
        (
            {"package.json": "{}", "pnpm-workspace.yaml": "# ours\npackages:\n  - 'packages/*'\n"},
            ("packages/*",),
        ),
        ({"package.json": "{}", "pnpm-workspace.yaml": ""}, ()),
    ],
)
def test_the_globs_of_a_workspace(files: dict[str, str], globs: tuple[str, ...]) -> None:
    assert package_globs(files) == globs


@pytest.mark.parametrize(
    ("files", "said"),
    [
        ({"pnpm-workspace.yaml": "packages: [\n"}, "pnpm-workspace.yaml: not YAML"),
        ({"pnpm-workspace.yaml": "packages: packages/*\n"}, "pnpm-workspace.yaml: packages: not"),
        ({"package.json": '{"workspaces": [3]}'}, "package.json: workspaces: 3 is not a glob"),
        ({"package.json": "{"}, "package.json: not JSON"),
    ],
)
def test_a_workspace_file_that_cannot_be_read_names_itself(
    files: dict[str, str], said: str
) -> None:
    with pytest.raises(WorkspaceError) as caught:
        package_globs(files)
    assert str(caught.value).startswith(said), caught.value
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("globs", "folders"),
    [
        (["packages/*"], ("packages/calc", "packages/cart")),
        (["./packages/*/", "apps/*"], ("apps/web", "packages/calc", "packages/cart")),
        (
            ["packages/**", "!**/fixtures/**"],
            ("packages/calc", "packages/cart"),
        ),
        (["packages/**"], ("packages/calc", "packages/cart", "packages/cart/test/fixtures/app")),
        (["tools/**/lint"], ("tools/deep/lint",)),
        (["nothing/*"], ()),
    ],
)
def test_the_folders_a_workspace_names(globs: list[str], folders: tuple[str, ...]) -> None:
    assert package_folders(globs, PATHS) == folders
