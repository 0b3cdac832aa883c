"""SWE-bench's files as researchers hold them: instances as a JSON list, JSON Lines,
a JSON object keyed by instance id or a Parquet export, with FAIL_TO_PASS and
PASS_TO_PASS as JSON strings or lists; predictions in their three shapes; the
environments file; and one line naming the file, the instance and the field for a
bad one."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchkit.bench.swebench import read_environments, read_instances, read_predictions
from benchkit.errors import BenchError, UsageError


def instance(n: int, *, as_strings: bool) -> dict[str, object]:
    f2p, p2p = [f"tests/test_a.py::test_fix_{n}"], [f"tests/test_a.py::test_old_{n}"]
    return {
        "repo": "acme/widgets",
        "instance_id": f"acme__widgets-{n}",
        "base_commit": "a" * 40,
        "patch": "diff --git a/w.py b/w.py\n",
        "test_patch": "diff --git a/tests/test_a.py b/tests/test_a.py\n",
        "problem_statement": f"bug {n}",
        "hints_text": "",
        "created_at": "2026-01-01T00:00:00Z",
        "version": "1.0",
        "FAIL_TO_PASS": json.dumps(f2p) if as_strings else f2p,
        "PASS_TO_PASS": json.dumps(p2p) if as_strings else p2p,
        "environment_setup_commit": "a" * 40,
        "difficulty": "<15 min fix",  # Verified's: read past
    }


def write(folder: Path, shape: str, rows: list[dict[str, object]]) -> Path:
    if shape == "json":
        path = folder / "instances.json"
        path.write_text(json.dumps(rows, indent=2))
    elif shape == "jsonl":
        path = folder / "instances.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n")
    elif shape == "keyed":
        path = folder / "instances.json"
        path.write_text(json.dumps({r["instance_id"]: r for r in rows}))
    else:
        path = folder / "test-00000-of-00001.parquet"
        pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.mark.parametrize("shape", ["json", "jsonl", "keyed", "parquet"])
@pytest.mark.parametrize("as_strings", [True, False], ids=["json-strings", "lists"])
def test_every_shape_of_an_instances_file_is_read_alike(
    tmp_path: Path, shape: str, as_strings: bool
) -> None:
    rows = [instance(1, as_strings=as_strings), instance(2, as_strings=as_strings)]
    found = read_instances(write(tmp_path, shape, rows))
    assert [i.instance_id for i in found] == ["acme__widgets-1", "acme__widgets-2"]
    assert found[1].FAIL_TO_PASS == ["tests/test_a.py::test_fix_2"]
    assert found[1].PASS_TO_PASS == ["tests/test_a.py::test_old_2"]
    assert (found[0].repo, found[0].version, found[0].problem_statement) == (
        "acme/widgets",
        "1.0",
        "bug 1",
    )


def test_a_parquet_export_of_lists_and_a_numeric_version_is_read(tmp_path: Path) -> None:
    """SWE-Gym's and SWE-bench-Live's lists, stored as Parquet lists; a version as a
    number, as some sets give it."""
    row = instance(3, as_strings=False) | {"version": 0.12}
    found = read_instances(write(tmp_path, "parquet", [row]))
    assert (found[0].version, found[0].FAIL_TO_PASS) == ("0.12", ["tests/test_a.py::test_fix_3"])


@pytest.mark.parametrize(
    ("change", "field", "said"),
    [
        ({"FAIL_TO_PASS": "[not json"}, "acme__widgets-1: FAIL_TO_PASS", "neither a list"),
        ({"base_commit": None}, "acme__widgets-1: base_commit", "valid string"),
        ({"repo": "widgets"}, "acme__widgets-1: repo", "'widgets' is not OWNER/NAME"),
        ({"problem_statement": ""}, "acme__widgets-1: problem_statement", "is empty"),
        ({"test_patch": " "}, "acme__widgets-1: test_patch", "is empty"),
    ],
)
def test_a_bad_instance_is_one_line_naming_the_file_the_instance_and_the_field(
    tmp_path: Path, change: dict[str, object], field: str, said: str
) -> None:
    path = write(tmp_path, "jsonl", [instance(1, as_strings=True) | change])
    with pytest.raises(BenchError) as caught:
        read_instances(path)
    assert (caught.value.file, caught.value.field) == (str(path), field)
    assert said in caught.value.message and "\n" not in str(caught.value)


def test_a_missing_field_a_broken_line_and_a_repeated_instance_are_named(tmp_path: Path) -> None:
    for field in ("patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS"):
        row = instance(1, as_strings=True)
        del row[field]
        path = write(tmp_path, "jsonl", [row])
        with pytest.raises(BenchError, match=rf"acme__widgets-1: {field}: Field required"):
            read_instances(path)
    path.write_text(json.dumps(instance(1, as_strings=True)) + "\n{oops\n")
    with pytest.raises(BenchError, match=r"instances.jsonl: line 2: not JSON: .* \(column 2\)"):
        read_instances(path)
    path.write_text(
        json.dumps(instance(1, as_strings=True)) * 1
        + "\n"
        + json.dumps(instance(1, as_strings=True))
    )
    with pytest.raises(BenchError, match=r"acme__widgets-1: instance_id: given twice"):
        read_instances(path)
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(BenchError, match=r"empty.jsonl: the file is empty"):
        read_instances(tmp_path / "empty.jsonl")
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(BenchError, match=r"bad.parquet: not a Parquet file"):
        read_instances(tmp_path / "bad.parquet")


def prediction(n: int, patch: str | None) -> dict[str, object]:
    return {
        "instance_id": f"acme__widgets-{n}",
        "model_name_or_path": "org/model-x",
        "model_patch": patch,
    }


@pytest.mark.parametrize("shape", ["jsonl", "json", "keyed"])
def test_predictions_in_each_shape_and_an_empty_or_null_patch(tmp_path: Path, shape: str) -> None:
    rows = [prediction(1, "diff --git a/w.py b/w.py\n"), prediction(2, ""), prediction(3, None)]
    path = tmp_path / f"preds.{'jsonl' if shape == 'jsonl' else 'json'}"
    if shape == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif shape == "json":
        path.write_text(json.dumps(rows))
    else:
        path.write_text(
            json.dumps(
                {r["instance_id"]: {k: v for k, v in r.items() if k != "instance_id"} for r in rows}
            )
        )
    found = read_predictions(path)
    assert [(p.instance_id, p.model_name_or_path, p.empty) for p in found] == [
        ("acme__widgets-1", "org/model-x", False),
        ("acme__widgets-2", "org/model-x", True),
        ("acme__widgets-3", "org/model-x", True),
    ]


def test_a_prediction_without_its_model_is_named(tmp_path: Path) -> None:
    path = tmp_path / "preds.jsonl"
    path.write_text(json.dumps({"instance_id": "acme__widgets-1", "model_patch": "x"}) + "\n")
    with pytest.raises(
        UsageError, match=r"preds.jsonl: acme__widgets-1: model_name_or_path: Field required"
    ):
        read_predictions(path)


ENVIRONMENT = {"kind": "venv", "python": "3.11", "packages": ["pytest==8.3.5"]}


@pytest.mark.parametrize("shape", ["nested-toml", "list-toml", "json"])
def test_an_environments_file_maps_each_repository_and_version(tmp_path: Path, shape: str) -> None:
    body = 'kind = "venv"\npython = "3.11"\npackages = ["pytest==8.3.5"]\n'
    if shape == "nested-toml":
        path = tmp_path / "envs.toml"
        path.write_text(f'["acme/widgets"."1.0"]\n{body}\n["acme/widgets".2]\nkind = "none"\n')
    elif shape == "list-toml":
        path = tmp_path / "envs.toml"
        path.write_text(
            f'[[environment]]\nrepo = "acme/widgets"\nversion = "1.0"\n{body}\n'
            '[[environment]]\nrepo = "acme/widgets"\nversion = 2\nkind = "none"\n'
        )
    else:
        path = tmp_path / "envs.json"
        path.write_text(json.dumps({"acme/widgets": {"1.0": ENVIRONMENT, "2": {"kind": "none"}}}))
    found = read_environments(path)
    assert found["acme/widgets", "1.0"].packages == ["pytest==8.3.5"]
    assert found["acme/widgets", "2"].kind == "none"


def test_a_bad_environment_names_its_repository_version_and_key(tmp_path: Path) -> None:
    path = tmp_path / "envs.toml"
    path.write_text('["acme/widgets"."1.0"]\nkind = "conda"\n')
    with pytest.raises(BenchError) as caught:
        read_environments(path)
    assert caught.value.field == "acme/widgets.1.0.kind"
