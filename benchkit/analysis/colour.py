"""A diff hunk's lines as HTML: each line's kind (removed, added, context) and base
number, its text coloured by Pygments where it knows the file's language (by its
name), escaped as it is elsewhere. The same hunk on many pages (a bench's human
change) is coloured once."""

from __future__ import annotations

from functools import lru_cache
from html import escape  # to str: a page holds thousands of tokens
from pathlib import PurePosixPath

from markupsafe import Markup
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_for_filename
from pygments.lexers.special import TextLexer
from pygments.token import STANDARD_TYPES, _TokenType
from pygments.util import ClassNotFound

from benchkit.analysis.diff_view import Line

SIGNS = {"removed": "-", "added": "+", "context": " "}


@lru_cache(maxsize=128)
def _lexer(name: str) -> Lexer | None:
    """The lexer of a file's language by its name; None for plain text or one unknown."""
    try:
        lexer = get_lexer_for_filename(name, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None
    return None if isinstance(lexer, TextLexer) else lexer


def _css(kind: _TokenType) -> str:
    """The class of a token's kind, or of the nearest kind it is a sort of."""
    found: _TokenType | None = kind
    while found is not None and found not in STANDARD_TYPES:
        found = found.parent
    return STANDARD_TYPES[found] if found is not None else ""


@lru_cache(maxsize=4096)
def _coloured(name: str, texts: tuple[str, ...]) -> tuple[str, ...]:
    """Each line's text as HTML, its tokens in spans of Pygments' classes."""
    lexer = _lexer(name)
    if lexer is None:
        return tuple(escape(t) for t in texts)
    lines: list[str] = []
    line: list[str] = []
    for kind, value in lexer.get_tokens("\n".join(texts)):
        for n, part in enumerate(value.split("\n")):
            if n:
                lines.append("".join(line))
                line = []
            css = _css(kind) if part else ""
            line.append(f'<span class="{css}">{escape(part)}</span>' if css else escape(part))
    lines.append("".join(line))
    return tuple(lines[: len(texts)]) + ("",) * (len(texts) - len(lines))


@lru_cache(maxsize=4096)
def lines_html(path: str, lines: tuple[Line, ...]) -> Markup:
    """The hunk's lines, one span each: its kind, its base number, its sign, its text."""
    texts = _coloured(PurePosixPath(path).name, tuple(line.text for line in lines))
    return Markup(
        "".join(
            f'<span class="{line.kind}"><span class="no">'
            f"{'' if line.base is None else line.base}</span>{SIGNS[line.kind]}"
            f'<span class="code">{text}</span></span>'
            for line, text in zip(lines, texts, strict=True)
        )
    )


def style() -> str:
    """The CSS of the token classes, inside a line's text only."""
    rules: list[str] = HtmlFormatter(style="default").get_token_style_defs(".code")  # type: ignore[no-untyped-call]
    return "\n".join(rules) + "\n"
