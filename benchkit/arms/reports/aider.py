"""Aider, `aider --message ... --yes-always`: text. It names its `Main model:` as it
starts. After each reply from the model it prints `Tokens: 2.4k sent, 1.2k cache
write, 800 cache hit, 450 received.` and `Cost: $0.0098 message, $0.0098 session.`
(its estimate from its own model prices; tokens rounded as it shows them, `2.4k`; a
cost of a cent or more to the cent), and `Applied edit to PATH` for each file it
changed. When the model fails it prints a litellm error's class and its own words
for it (`litellm.RateLimitError: ...`), and exits 0 even then: such a line after its
last reply is the session's error."""

from __future__ import annotations

import re

from benchkit.arm_report import ArmReport, SessionReport, Tokens
from benchkit.arms.reports.values import count, edited, number

COUNT = r"(\d+(?:\.\d+)?k?)"
TOKENS = re.compile(
    rf"^Tokens: {COUNT} sent(?:, {COUNT} cache write)?(?:, {COUNT} cache hit)?, {COUNT} received\."
)
COST = re.compile(r"Cost: \$(\d+(?:\.\d+)?) message, \$(\d+(?:\.\d+)?) session\.")
APPLIED = re.compile(r"^Applied edit to (.+?)\s*$")
MODEL = re.compile(r"^Main model: (\S+)")
ERROR = re.compile(
    r"^(litellm\.\w+Error\b.*|The API provider .*|.* has hit a token limit!.*|"
    r"Your estimated chat context .* exceeds .*)$"
)


def _count(shown: str | None) -> int | None:
    """A count as aider shows it: `450`, `2.4k`, `12k`; 0 where it shows none."""
    if not shown:
        return 0
    thousands = shown.endswith("k")
    value = number(shown.removesuffix("k"))
    return None if value is None else count(round(value * 1000) if thousands else value)


def read_aider(stdout: str) -> ArmReport:
    """What aider printed in a one-message run."""
    tokens, replies = Tokens(), 0
    files: list[str] = []
    errors: list[str] = []
    cost: float | None = None
    model: str | None = None
    for raw in stdout.splitlines():
        line = raw.strip()
        if found := MODEL.match(line):
            model = found.group(1)
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
    return ArmReport.of_session(session, error=error, model=model)
