"""Sites by session: which session (or commit) of the arm first covered each site.

An arm that commits as it works leaves its steps: the site a step first covers is
that step's, and its session's where the sessions tell (one commit a session, or a
single session). Where the tool names each session's edited files and did not
commit, a covered site is the first session's that edited its file. A session's
kind (agent, mechanical, manual) is the tool's word. Pure: sites and steps in, sites
out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from benchkit.arm_report import ArmCommit, SessionReport
from benchkit.records import SiteResult


def first_steps(covered_by_step: Sequence[frozenset[int]]) -> dict[int, int]:
    """Each site's first step: the first of the cumulative trees (base to each
    commit, in order) whose diff covers it."""
    first: dict[int, int] = {}
    for step, covered in enumerate(covered_by_step):
        for site in covered:
            first.setdefault(site, step)
    return first


def by_session(
    sites: Sequence[SiteResult],
    sessions: Sequence[SessionReport],
    commits: Sequence[ArmCommit] = (),
    first: Mapping[int, int] | None = None,
) -> tuple[SiteResult, ...]:
    """The covered sites with the step and session that first covered them, and that
    session's kind: by the commits where `first` (site to step) is given, else by the
    files each session edited, else all the one session's."""
    kinds = {s.session: s.kind for s in sessions}

    def given(site: SiteResult, session: int | None, step: int | None) -> SiteResult:
        by = kinds.get(session) if session is not None else None
        return replace(site, session=session, step=step, by=by)

    found = []
    for site in sites:
        if not site.covered:
            found.append(site)
        elif first is not None and commits:
            step = first.get(site.site)
            session = commits[step].session if step is not None else None
            found.append(given(site, session, step))
        elif any(s.files_from == "tool" for s in sessions):
            editor = next((s.session for s in sessions if site.file in s.files), None)
            found.append(given(site, editor, None))
        elif len(sessions) == 1:
            found.append(given(site, sessions[0].session, None))
        else:
            found.append(site)
    return tuple(found)
