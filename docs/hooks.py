"""mkdocs hook: the parts of the docs that are generated from the code.

Markers in a page's markdown, each on a line of its own, are replaced as the page
is built:

- `<!-- columns: TABLE -->`: the columns of that store table, from
  `benchkit.store.schema.TABLES` (name, Arrow type, meaning);
- `<!-- check-columns -->`: the two `runs` columns each bench check adds, from
  `benchkit.store.schema.check_columns`;
- `<!-- signature: NAME -->`: the signature of `benchkit.NAME`, from
  `inspect.signature`.

A marker naming nothing is a warning, and so is a table of `TABLES` that no
`columns` marker shows, or a name of `benchkit.__all__` that no `signature` marker
shows: `mkdocs build --strict` fails on them, so the pages cannot drift from the code.
benchkit is imported inside the functions, never when mkdocs loads this file.
"""

from __future__ import annotations

import inspect
import logging
import re
from typing import Any

log = logging.getLogger("mkdocs.hooks.benchkit")

MARKER = re.compile(r"^<!-- (columns|check-columns|signature)(?:: *([\w.-]+))? -->$", re.M)
WIDTH = 88  # a signature longer than this is written one parameter a line
STARS: dict[inspect._ParameterKind, str] = {
    inspect.Parameter.VAR_POSITIONAL: "*",
    inspect.Parameter.VAR_KEYWORD: "**",
}

_seen: dict[str, set[str]] = {"columns": set(), "signature": set()}


def on_pre_build(config: Any) -> None:
    for seen in _seen.values():
        seen.clear()


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if "<!-- " not in markdown:
        return markdown

    def replace(match: re.Match[str]) -> str:
        kind, name = match.group(1), match.group(2)
        where = page.file.src_uri
        if kind == "columns":
            return _columns(name, where)
        if kind == "check-columns":
            return _check_columns()
        return _signature(name, where)

    return MARKER.sub(replace, markdown)


def on_post_build(config: Any) -> None:
    import benchkit
    from benchkit.store.schema import TABLES

    for table in sorted(set(TABLES) - _seen["columns"]):
        log.warning("docs: store table %r has no `<!-- columns: %s -->` on any page", table, table)
    for name in sorted(set(benchkit.__all__) - _seen["signature"]):
        log.warning("docs: benchkit.%s has no `<!-- signature: %s -->` on any page", name, name)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _type(column: Any) -> str:
    """A column's type as the Arrow type it is stored as (string, list<item: string>)."""
    from benchkit.store.schema import arrow_type

    return _cell(str(arrow_type(column.type)))


def _columns(table: str | None, where: str) -> str:
    from benchkit.store.schema import TABLES

    if table not in TABLES:
        log.warning("docs: %s: no store table %r (tables: %s)", where, table, ", ".join(TABLES))
        return ""
    _seen["columns"].add(table)
    rows = ["| column | type | meaning |", "| --- | --- | --- |"]
    for column in TABLES[table]:
        rows.append(f"| `{column.name}` | `{_type(column)}` | {_cell(column.doc)} |")
    return "\n".join(rows)


def _check_columns() -> str:
    from benchkit.store.schema import check_columns

    rows = ["| column | type | meaning |", "| --- | --- | --- |"]
    for column in check_columns("CHECK"):
        name = column.name.replace("CHECK", "<check>")
        doc = column.doc.replace("CHECK", "the check")
        rows.append(f"| `{name}` | `{_type(column)}` | {_cell(doc)} |")
    return "\n".join(rows)


def _annotation(annotation: Any) -> str:
    if annotation is inspect.Parameter.empty:
        return ""
    if isinstance(annotation, str):
        return annotation
    return inspect.formatannotation(annotation)


def _default(value: Any) -> str:
    """A default as written; a long one (a record, a set, whose order may vary from
    one build to the next) by its type only."""
    text = repr(value)
    if len(text) <= 100 and not isinstance(value, (set, frozenset)):
        return text
    return f"{type(value).__name__}(...)"


def _parameters(signature: inspect.Signature) -> list[str]:
    parts: list[str] = []
    star_written = False
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and not star_written:
            parts.append("*")
            star_written = True
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            star_written = True
        text = STARS.get(parameter.kind, "") + parameter.name
        annotation = _annotation(parameter.annotation)
        if annotation:
            text += f": {annotation}"
        if parameter.default is not inspect.Parameter.empty:
            text += (" = " if annotation else "=") + _default(parameter.default)
        parts.append(text)
        if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
            following = list(signature.parameters.values())
            index = following.index(parameter)
            if index + 1 == len(following) or following[index + 1].kind is not parameter.kind:
                parts.append("/")
    return parts


def _signature(name: str | None, where: str) -> str:
    import benchkit

    public, _, inner = (name or "").partition(".")  # `swebench.benches`: of a namespace
    if public not in benchkit.__all__:
        log.warning("docs: %s: benchkit.%s is not a public name (__all__)", where, name)
        return ""
    _seen["signature"].add(public)
    try:
        value = getattr(benchkit, public)
        if inner:
            value = getattr(value, inner)
    except (ImportError, AttributeError) as exc:  # a module that moved: say which, once
        log.warning("docs: %s: benchkit.%s cannot be imported: %s", where, name, exc)
        return ""
    if not callable(value):
        return f"```python\nbk.{name}: {type(value).__name__}  # {value!r} here\n```"
    signature = inspect.signature(value)
    if inspect.isclass(value):
        returns = ""
    else:
        returns = _annotation(signature.return_annotation)
        returns = f" -> {returns}" if returns else ""
    parts = _parameters(signature)
    head = f"bk.{name}"
    one_line = f"{head}({', '.join(parts)}){returns}"
    if len(one_line) <= WIDTH:
        text = one_line
    else:
        text = head + "(\n" + "".join(f"    {part},\n" for part in parts) + ")" + returns
    return f"```python\n{text}\n```"
