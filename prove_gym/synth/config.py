"""Every knob of synthesis in one picklable object, with the paper's rates as defaults."""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prove_gym.server.state import MAX_STATE_SIZE, stable_int

if TYPE_CHECKING:
    from prove_gym.registry import Registry

BLOCK_SEED_BASE = 100_000
"""Block states' seeds start here; the shared pool's are below it."""
OWN_STATE_BLOCKS = 8
"""A server's first blocks, which sample block states of their own (``SynthConfig.state_blocks``)."""
SHIP_SEED = 1
"""The master seed of every server's synthesized tasks. Blocks draw from (seed, server,
block), so each server's run is its own; ids are ``<server>-1-<k>``, which sort after the
hand-written ``<server>-001`` ('1' > '0', where seed 0's ``<server>-0-`` sorts first)."""

SHIP_N = 250
"""Synthesized tasks per server: enough that every env version keeps well over 200."""


@dataclass(frozen=True)
class SynthConfig:
    """What ``prove-gym synth`` generates and how.

    Rates are per conversation (task). The defaults are the paper's where it
    gives one (docs/paper.md, section 2); the others are marked.

    Attributes:
        servers: Server names to synthesize for; ``("all",)`` means every installed one.
        n: Tasks to write in all, split evenly over the servers (the first servers
            get one more when it does not divide).
        seed: Master seed: same seed and flags give byte-identical output.
        state_seeds: Size of the bounded pool of state seeds used when
            ``block_states`` is 0 (shared by all servers; independent of ``seed``).
            Not in the paper.
        block_states: Fresh states each block samples for its tasks (seeds >= 100,000
            drawn from ``(seed, server, group)``, sizes from ``sizes``; see
            ``state_blocks`` for the group), so a large run sees a thousand and more
            distinct initial states while each is still sampled once per process. Only the
            primary server's state is sampled: distractor servers lend their schemas and
            are not in the task's state hash. 0 uses the pool only. Not in the paper.
        state_blocks: Blocks that share the same block states, after a server's first
            :data:`OWN_STATE_BLOCKS` (which have states of their own, so a small run
            still splits into train and test by many states). 1 (the default) gives
            every block states of its own: 1,000 tasks see over 250 distinct initial
            states. Sampling a state, hashing it and listing its entities costs about
            60 ms of CPU, as much as five kept tasks, so raising this trades states for
            speed: N samples about N times fewer states after a server's first
            :data:`OWN_STATE_BLOCKS` blocks. Not in the paper.
        sizes: State sizes the block states are drawn from (``size`` overrides).
        test_fraction: Share of tasks held out for ``test.jsonl``, by initial state so that
            no test state is seen in training: the last ``ceil(f·pool)`` seeds of the pool
            (at least one when > 0), and of each server's block states those that hold
            about this share of its tasks, at least one state where the server has two
            (:func:`~prove_gym.synth.pipeline.assign_splits`).
        size: State size of every task; ``None`` means the primary server's default size
            for pool states and ``sizes`` for block states.
        chain_lengths: Inclusive range of tool-chain lengths (paper: 2-5).
        length_weights: Relative weights of the lengths in ``chain_lengths`` (not in
            the paper: short chains a little more often).
        turns: Inclusive range of user turns per conversation (paper: 2-3).
        info_levels: Shares of complete / missing / minimal requests (paper: 0.6/0.2/0.2).
        distractor_rate: Share of tasks offered extra tools from other servers (paper: 0.4).
        distractors: Inclusive range of how many (paper: 3-8).
        strip_enum_rate: Share of tasks whose offered schemas lose their enum values
            (paper: 0.3).
        irrelevant_rate: Share of tasks with an out-of-scope request, an ``abstain``
            turn (paper: 0.05).
        missing_tool_rate: Share of tasks whose last request needs a tool that is not
            offered, an ``abstain`` turn after requests that are served (paper: no rate
            given; not ours).
        abstention_rate: Share of kept tasks that are abstention examples as a whole: every
            turn asks for something no offered tool does (out of scope, or this server's
            tool is not offered), so the right answer is no call at all (paper: 1,122 of
            13,517, 8.3%).
        max_error_rate: Conversations whose gold calls fail more often than this are
            dropped: the shown failed attempts and given-up calls among all the gold's
            calls. Arguments the synthesizer drew and the server refused while it
            searched for ones that work are not in the conversation and do not count
            (paper: 0.30, on the replayed conversation).
        recovery_rate: Share of the steps that failed before succeeding whose gold keeps
            the failed attempt (a step with ``expect_error``) followed by its recovery:
            the tool the error named, then the call again (*repair*), or the call again
            with the parameter the error asked for (*retry*). The rest show the direct
            calls only. Only attempts the error message explains qualify, and only when
            the text still agrees with the calls (paper: the state machine's recovery
            turns; no rate given; not ours).
        give_up_rate: Share of the calls that fail on the state as the user asked for them
            (``precondition_failed`` or ``conflict`` on the first draw, with no tool the
            error names as a fix) whose gold gives up: the call, its error, then an
            explanation and no further call; the conversation ends with that turn (the
            paper's third way out of a failure). The rest draw other arguments, as
            before. The failed call counts against ``max_error_rate``, so a call is
            given up only where the gold stays within it (paper: no rate given; not
            ours).
        dedup_threshold: Jaccard similarity of call-sequence features at or above which a
            task is a near-duplicate of an earlier one and dropped (paper: 0.70).
        dedup: What the features compare: ``"calls"`` (tools, argument names, tool
            bigrams and turn kinds: the paper's filter) or ``"values"`` (argument
            values too, so the same calls about other entities are all kept).
        max_attempts: Argument draws per chain step before giving up on the chain.
        block_size: Candidate conversations per unit of work. Output does not depend on
            the number of workers because blocks, not workers, own the randomness. Each
            block samples its own states (``block_states``), so smaller blocks mean more
            distinct states for the same tasks: with 7 (the default) about one kept task
            in four starts from a state of its own (over 250 per 1,000 tasks); 25 gave
            about 100. Not in the paper.
        view_lag: A block starts from what the collector had kept from every block of
            its server but the ``view_lag - 1`` right before it
            (:class:`~prove_gym.synth.generate.View`): it skips the mix kinds already
            full and drops a near duplicate of a kept task as soon as its calls have
            run, before its text and replay are built. So at most ``view_lag`` blocks of
            one server run at once (1: one at a time): raise it for a cluster of many
            workers (a staler view catches fewer: with 4, a 13.5K-task run built twice as
            many candidates the collector then dropped as with 2, the default, which
            still lets 20 servers keep two workers busy). Output depends on it, never on
            the workers. Not in the paper.
        workers: Processes to fan out over (1 = in this process).
        writer: Who writes the user turns: ``"template"`` (the renderer's text) or
            ``"llm"`` (the endpoint at ``llm_url`` rewrites each planned turn; a rewrite
            the checks reject falls back to the template:
            :mod:`~prove_gym.synth.writer`).
        llm_url: OpenAI-compatible base URL (``http://host:port/v1``) for
            ``writer="llm"`` and ``llm_graph``.
        llm_model: Model name sent to the endpoint.
        llm_timeout: Seconds per request before it counts as failed (it is retried
            twice; a turn whose request fails keeps its template text).
        llm_api_key: Bearer token for the endpoint (``None``: read ``OPENAI_API_KEY``).
        llm_graph: Also refine the dependency graph with the LLM.
        cache_dir: Where LLM replies are cached (``None``: ``~/.cache/prove_gym``).
    """

    servers: tuple[str, ...] = ("all",)
    n: int = 100
    seed: int = 0
    state_seeds: int = 10
    block_states: int = 1
    state_blocks: int = 1
    sizes: tuple[int, ...] = (1, 2)
    test_fraction: float = 0.1
    size: int | None = None
    chain_lengths: tuple[int, int] = (2, 5)
    length_weights: tuple[float, ...] = (0.3, 0.3, 0.25, 0.15)
    turns: tuple[int, int] = (2, 3)
    info_levels: tuple[float, float, float] = (0.6, 0.2, 0.2)
    distractor_rate: float = 0.4
    distractors: tuple[int, int] = (3, 8)
    strip_enum_rate: float = 0.3
    irrelevant_rate: float = 0.05
    missing_tool_rate: float = 0.03
    abstention_rate: float = 0.08
    max_error_rate: float = 0.30
    recovery_rate: float = 0.5
    give_up_rate: float = 0.5
    dedup_threshold: float = 0.70
    dedup: str = "calls"
    max_attempts: int = 3
    block_size: int = 7
    view_lag: int = 2
    workers: int = 1
    writer: str = "template"
    llm_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = field(default=None, repr=False)
    llm_timeout: float = 60.0
    llm_graph: bool = False
    cache_dir: str | None = None

    def __post_init__(self) -> None:
        lo, hi = self.chain_lengths
        if not 1 <= lo <= hi:
            raise ValueError(f"chain_lengths must be 1 <= lo <= hi, got {self.chain_lengths}")
        if len(self.length_weights) not in (0, hi - lo + 1):
            raise ValueError(
                f"length_weights needs {hi - lo + 1} weights for lengths {lo}-{hi}, "
                f"got {len(self.length_weights)}"
            )
        if not 1 <= self.turns[0] <= self.turns[1]:
            raise ValueError(f"turns must be 1 <= lo <= hi, got {self.turns}")
        if len(self.info_levels) != 3 or min(self.info_levels) < 0 or sum(self.info_levels) <= 0:
            raise ValueError(
                "info_levels are three non-negative shares (complete, missing, minimal)"
            )
        for name in (
            "distractor_rate",
            "strip_enum_rate",
            "irrelevant_rate",
            "missing_tool_rate",
            "abstention_rate",
            "max_error_rate",
            "recovery_rate",
            "give_up_rate",
            "dedup_threshold",
            "test_fraction",
        ):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {value}")
        if self.dedup not in ("calls", "values"):
            raise ValueError(f"dedup must be 'calls' or 'values', got {self.dedup!r}")
        if not 1 <= self.distractors[0] <= self.distractors[1]:
            raise ValueError(f"distractors must be 1 <= lo <= hi, got {self.distractors}")
        sizes = (*self.sizes, *([self.size] if self.size is not None else []))
        if (
            self.block_states < 0
            or not self.sizes
            or not all(1 <= s <= MAX_STATE_SIZE for s in sizes)
        ):
            raise ValueError(
                "block_states must be >= 0 and sizes a non-empty tuple of sizes from 1 to "
                f"{MAX_STATE_SIZE}"
            )
        for name in (
            "n",
            "state_seeds",
            "state_blocks",
            "max_attempts",
            "block_size",
            "view_lag",
            "workers",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.writer not in ("template", "llm"):
            raise ValueError(f"writer must be 'template' or 'llm', got {self.writer!r}")
        if (self.writer == "llm" or self.llm_graph) and not self.llm_url:
            raise ValueError("writer='llm' and llm_graph need llm_url (the endpoint's base URL)")
        if self.llm_url and self.writer != "llm" and not self.llm_graph:
            raise ValueError("llm_url is used by writer='llm' or llm_graph: pass one of them")
        if self.llm_url and not self.llm_model:
            raise ValueError("llm_url needs llm_model (the model name the endpoint serves)")
        if not self.llm_timeout > 0:
            raise ValueError(f"llm_timeout must be positive, got {self.llm_timeout}")

    # ------------------------------------------------------------ derived
    def seed_pool(self) -> list[int]:
        """The bounded pool of state seeds (shared by every server), ascending.

        It depends only on ``state_seeds``, not on ``seed``: datasets made with other
        master seeds hold other conversations about the same states, and their
        train/test split by state seed agrees.
        """
        seeds: list[int] = []
        j = 0
        while len(seeds) < self.state_seeds:
            s = stable_int("synth-state", j) % 100_000
            if s not in seeds:
                seeds.append(s)
            j += 1
        return sorted(seeds)

    def test_seeds(self) -> frozenset[int]:
        """State seeds whose tasks go to the test split: the last ``ceil(f·pool)`` of the pool."""
        if self.test_fraction <= 0:
            return frozenset()
        pool = self.seed_pool()
        k = min(len(pool) - 1, max(1, math.ceil(self.test_fraction * len(pool))))
        return frozenset(pool[len(pool) - k :]) if k > 0 else frozenset()

    def block_state_list(self, server: str, block: int) -> list[tuple[int, int | None]]:
        """The ``(seed, size)`` states of one block (``size`` None: the server's default).

        A server's first :data:`OWN_STATE_BLOCKS` blocks each have their own; after
        them, every ``state_blocks`` consecutive blocks share theirs. The first block
        draws at least two, so a server done in one block still has a state for each
        split (see :func:`~prove_gym.synth.pipeline.assign_splits`).
        """
        rng = random.Random(stable_int("synth-states", self.seed, server, self._state_group(block)))
        count = max(2, self.block_states) if block == 0 and self.block_states else self.block_states
        return [
            (BLOCK_SEED_BASE + rng.randrange(10**9), self.size or rng.choice(self.sizes))
            for _ in range(count)
        ]

    def last_block_of_states(self, block: int) -> bool:
        """Whether no later block shares ``block``'s fresh states (:meth:`block_state_list`)."""
        return self._state_group(block + 1) != self._state_group(block)

    def _state_group(self, block: int) -> int:
        if block < OWN_STATE_BLOCKS:
            return block
        return OWN_STATE_BLOCKS + (block - OWN_STATE_BLOCKS) // self.state_blocks

    def to_dict(self) -> dict[str, Any]:
        """The flags as JSON (the API key left out), for the report."""
        out = dataclasses.asdict(self)
        out.pop("llm_api_key", None)
        out.pop("workers", None)  # output does not depend on it
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}


def resolve_servers(names: tuple[str, ...] | list[str], registry: Registry) -> list[str]:
    """``("all",)`` -> every installed server (sorted); names are checked."""
    if not names or list(names) == ["all"]:
        return list(registry.servers)
    out = []
    for name in names:
        registry.get_server(name)  # a KeyError naming the installed servers
        if name not in out:
            out.append(name)
    return out
