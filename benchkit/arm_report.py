"""What an arm said it did: its cost and where it came from, its tokens, its
sessions and the files each edited, the commits it made. Plain frozen records, no
I/O; a run holds its arm's report (`benchkit.records.Run.report`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from benchkit.columns import columns, stored

MOST_USD = 1_000_000.0  # a pilot's cost past a million dollars is a tool's bug, not a cost


@dataclass(frozen=True, kw_only=True)
class Tokens:
    """Tokens a model read and wrote, as a tool reports them. `input` is every token
    the model read, cached or not (a tool that counts its uncached ones apart has
    them added back); `cached` is those read from its cache, `cache_write` those
    written to it; `output` every token it wrote, reasoning included. None: the tool
    did not say."""

    input: int | None = None
    cached: int | None = None
    cache_write: int | None = None  # of input, tokens written to its cache (Anthropic's)
    output: int | None = None

    def __add__(self, other: Tokens) -> Tokens:
        def add(a: int | None, b: int | None) -> int | None:
            return b if a is None else a if b is None else a + b

        return Tokens(
            input=add(self.input, other.input),
            cached=add(self.cached, other.cached),
            cache_write=add(self.cache_write, other.cache_write),
            output=add(self.output, other.output),
        )

    @property
    def given(self) -> bool:
        return self != NO_TOKENS


NO_TOKENS = Tokens()
TOKEN_COLUMNS = (  # a run's and a session's alike: (name, kind, meaning), in `Tokens`' order
    ("input_tokens", "int64", "Tokens the model read, cached or not, as the tool reported them."),
    ("cached_input_tokens", "int64", "Of those, tokens read from its cache."),
    ("cache_write_tokens", "int64", "Of those, tokens written to its cache."),
    ("output_tokens", "int64", "Tokens the model wrote, reasoning included."),
)


@dataclass(frozen=True, kw_only=True)
class SessionReport:
    """One agent session, as the arm's report gives it: what the tool said, and the
    files it edited, in the order it first edited them (`files_from` says whence:
    the tool's own output, or the arm's commits)."""

    session: int  # its index in the report
    session_id: str | None = None
    status: str | None = None
    cost_usd: float | None = None
    price_table: str | None = None  # a computed cost's table; None: reported or missing
    turns: int | None = None
    duration_s: float | None = None
    tokens: Tokens = NO_TOKENS
    files: tuple[str, ...] = ()
    files_from: str | None = None  # tool or commits; None: nothing says
    kind: str | None = None  # agent, mechanical (rules, a codemod) or manual, as the tool says
    reason: str | None = None  # why it ended as it did (rejected on `tests`), as the tool says

    @property
    def cost_source(self) -> str:
        return cost_source(self.cost_usd, self.price_table)


@dataclass(frozen=True, kw_only=True)
class ArmCommit:
    """A commit the arm made in its worktree: a step of its work (aider commits each
    edit), in order."""

    step: int  # from 0
    sha: str
    subject: str
    files: tuple[str, ...]
    session: int | None = None  # the session it belongs to, where the sessions tell


def cost_source(cost: float | None, price_table: str | None) -> str:
    """Where a cost came from: reported by the tool, computed from its tokens by a
    price table, or missing."""
    return "missing" if cost is None else "computed" if price_table else "reported"


@dataclass(frozen=True, kw_only=True)
class ArmReport:
    """What an arm said it did; what it did not say stays None (never invented)."""

    cost_usd: float | None = field(
        default=None,
        metadata=columns(
            (
                "cost_usd",
                "float64",
                "Cost in USD, as the arm reported it or computed from its tokens.",
            ),
            (
                "cost_source",
                "string",
                "reported (by the tool), computed (from its tokens and a price table) or "
                "missing: never a guess.",
            ),
            (
                "price_table",
                "string",
                "The price table a computed cost used (its file and date); null otherwise.",
            ),
        ),
    )
    price_table: str | None = None  # the table a computed cost came from: `cost_source`
    tokens: Tokens = field(
        default_factory=Tokens,
        metadata=columns(*TOKEN_COLUMNS),
    )
    model: str | None = field(
        default=None,
        metadata=stored("The model the tool says it ran, where it says.", name="reported_model"),
    )
    model_tokens: tuple[tuple[str, Tokens], ...] = ()  # by model, where the tool splits them
    sessions: int | None = field(default=None, metadata=stored("Agent sessions the arm reported."))
    sessions_accepted: int | None = field(
        default=None, metadata=stored("Sessions whose work was kept.")
    )
    sessions_rejected: int | None = field(
        default=None, metadata=stored("Sessions whose work was dropped.")
    )
    feedback_rounds: int | None = field(
        default=None, metadata=stored("Feedback rounds the arm reported.")
    )
    over_budget: bool | None = field(
        default=None, metadata=stored("The arm stopped at, or went past, its cap.")
    )
    turns: int | None = field(default=None, metadata=stored("Agent turns the arm reported."))
    flaky_files: tuple[str, ...] | None = field(
        default=None,
        metadata=stored("Flaky test files the tool itself reported.", name="reported_flaky_files"),
    )
    session_reasons: str | None = field(
        default=None,
        metadata=stored(
            "How the sessions ended, counted, with the tool's reasons: `3 rejected on tests, "
            "1 stopped at the budget`; as a published table wrote it for an imported run."
        ),
    )
    pr_url: str | None = field(
        default=None, metadata=stored("The pull request the arm opened, as its report says.")
    )
    pushed_repository: str | None = field(
        default=None,
        metadata=stored("The repository (a fork, OWNER/NAME) the arm pushed its change to."),
    )
    pushed_branch: str | None = field(
        default=None, metadata=stored("The branch the arm pushed, as its report says.")
    )
    pushed_sha: str | None = field(
        default=None, metadata=stored("The commit the arm pushed, as its report says.")
    )
    duration_s: float | None = None
    error: str | None = None  # what the tool said went wrong (a subtype, a message)
    session_list: tuple[SessionReport, ...] = ()
    problem: str | None = None  # why the report could not be read

    @property
    def cost_source(self) -> str:
        return cost_source(self.cost_usd, self.price_table)

    @classmethod
    def of_session(
        cls,
        session: SessionReport,
        *,
        error: str | None = None,
        model: str | None = None,
        model_tokens: tuple[tuple[str, Tokens], ...] = (),
        over_budget: bool | None = None,
        problem: str | None = None,
    ) -> ArmReport:
        """The report of a tool that ran one session: the run's cost, tokens, turns
        and time are its session's."""
        return cls(
            cost_usd=session.cost_usd,
            tokens=session.tokens,
            model=model,
            model_tokens=model_tokens,
            sessions=1,
            turns=session.turns,
            duration_s=session.duration_s,
            over_budget=over_budget,
            error=error,
            session_list=(session,),
            problem=problem,
        )


NO_REPORT = ArmReport()
