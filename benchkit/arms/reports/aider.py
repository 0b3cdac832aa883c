"""Aider, `aider --message ... --yes-always`: text. After each reply from the model
it prints `Tokens: 2.4k sent, 1.2k cache write, 800 cache hit, 450 received.` and
`Cost: $0.0098 message, $0.0098 session.` (its estimate from its own model prices;
tokens rounded as it shows them, `2.4k`, and the session's cost to the cent above
one), `Applied edit to PATH` for each file it changed, and a litellm error's class
and aider's words for it (`litellm.RateLimitError: ...`) when the model fails: it
exits 0 even then, so such a line after its last reply is the session's error."""

from __future__ import annotations

import re

from benchkit.arms.reports.values import edited, number
from benchkit.records import ArmReport, SessionReport, Tokens

COUNT = r"(\d+(?:\.\d+)?k?)"
TOKENS = re.compile(
    rf"^Tokens: {COUNT} sent(?:, {COUNT} cache write)?(?:, {COUNT} cache hit)?, {COUNT} received\."
)
COST = re.compile(r"Cost: \$(\d+(?:\.\d+)?) message, \$(\d+(?:\.\d+)?) session\.")
APPLIED = re.compile(r"^Applied edit to (.+?)\s*$")
ERROR = re.compile(
    r"^(litellm\.\w+Error\b.*|The API provider .*|.* has hit a token limit!.*|"
    r"Your estimated chat context .* exceeds .*)$"
)


def _count(shown: str | None) -> int:
    """A count as aider shows it: `450`, `2.4k`, `12k`."""
    if not shown:
        return 0
    if shown.endswith("k"):
        return round(float(shown[:-1]) * 1000)
    return int(float(shown))


def read_aider(stdout: str) -> ArmReport:
    """What aider printed in a one-message run."""
    tokens, replies = Tokens(), 0
    files: list[str] = []
    errors: list[str] = []
    cost: float | None = None
    for raw in stdout.splitlines():
        line = raw.strip()
        if found := TOKENS.match(line):
            sent, written, hit, received = found.groups()
            replies += 1
            errors = []  # a reply after an error: the retry worked
            tokens = tokens + Tokens(
                input=_count(sent),
                cached=_count(hit),
                cache_write=_count(written),
                output=_count(received),
            )
        if found := COST.search(line):
            cost = number(found.group(2))  # its running total for the session
        elif found := APPLIED.match(line):
            files.append(found.group(1))
        elif ERROR.match(line):
            errors.append(line)
    if not replies and not errors and not files:
        return ArmReport(problem="no reply of the model in aider's output (no `Tokens:` line)")
    error = errors[0] if errors else None
    session = SessionReport(
        session=0,
        status="error" if error else "done",
        cost_usd=cost,
        turns=replies,
        tokens=tokens,
        files=edited(files),
        files_from="tool",
    )
    return ArmReport(
        cost_usd=cost,
        tokens=tokens,
        sessions=1,
        turns=replies,
        error=error,
        session_list=(session,),
    )
