"""One conversation at a time: sample, ground, execute, render, validate.

The unit of work is a *block*: ``block_size`` candidate conversations of one
server whose randomness comes only from ``(seed, server, block index)``.
:func:`run_block` is a pure function of its arguments, so blocks can run in
this process, in a process pool, or as Ray tasks, and the output never depends
on how many workers there are.

A candidate goes through the paper's conversation state machine:

1. draw the knobs (information level, turns, distractors, enum stripping,
   irrelevant request, missing tool, whole-task abstention) and a state: one of
   the block's fresh states (the bounded pool when ``block_states`` is 0). Only
   the primary server's state is sampled: distractor servers lend schemas;
2. sample a chain around an inverse-frequency-weighted target tool and split it
   into contiguous requests (user turns). A chain is drawn again (up to
   ``PLAN_DRAWS`` times) when the calls it is sure to make are already a near
   duplicate of a kept task, or when a clarify candidate's turns open with no call
   that has a value to leave out: either would be dropped once it had run;
3. run the chain on a freshly reset session of the state seed, grounding
   each step's arguments in live state just before it runs. A failed call is
   retried with fresh arguments (up to ``max_attempts``); when its error message
   names a tool that fixes it ("Start it with start_engine first"), that tool is
   run first (*repair*, "try another tool"). A call that fails on the state as the
   user asked for it, with no fix named, may instead be *given up* (``give_up_rate``):
   the gold shows it failing and the conversation ends with that turn, explained.
   A step that never succeeds ends the conversation (dropped: ``step_failed``).
   A write that changes nothing is drawn again like a failure
   (``noop_write`` when it never does anything);
4. render the user turns (clarify / abstain turns as the knobs say);
5. validate: the gold's error rate (its shown attempts and given-up calls among
   its calls; arguments drawn and refused while searching are not the gold's)
   at or below ``max_error_rate``, credentials traced, text and gold calls
   agreeing (no template residue, every gold value said or read earlier), and a
   replay of the task's JSON on a freshly reset session identical in results and
   final state.

A whole abstention task (``abstention_rate``) skips 2-3: every turn asks for
what no offered tool does, so the gold makes no call.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prove_gym.registry import Registry, get_registry
from prove_gym.server.base import Server
from prove_gym.server.gc_tuning import rare_collections
from prove_gym.server.result import ToolResult
from prove_gym.server.session import Session
from prove_gym.server.state import stable_int
from prove_gym.server.tool import ToolSpec
from prove_gym.synth.chains import ChainSampler, PlannedStep, is_secret_kind, weighted_choice
from prove_gym.synth.config import SynthConfig, resolve_servers
from prove_gym.synth.dates import date_style
from prove_gym.synth.enums import stripped_schema
from prove_gym.synth.graph import STATE, ToolProfile, build_graph, refine_graph
from prove_gym.synth.grounding import (
    DoneStep,
    Grounded,
    Grounder,
    Lessons,
    entity_index,
    forget_entity_index,
    message_hints,
    repair_tools,
)
from prove_gym.synth.knowledge import Knowledge
from prove_gym.synth.lint import (
    DESTROY_VERBS,
    FLAW_CLASSES,
    LOGIN,
    clarify_value_said,
    clarify_with_independent,
    contradicting_filters,
    foreign_value,
    idle_login,
    inverse_write,
    misfit_identifier,
    moot_write,
    noop_update,
    repeated_login,
    repeated_write,
    second_persona,
)
from prove_gym.synth.lint import Reader as LintReader
from prove_gym.synth.llm import LLMClient
from prove_gym.synth.render import (
    OPENERS,
    SLOT,
    RenderedTurn,
    Renderer,
    can_leave_out,
    choice_words,
    creates,
    fillable_phrasings,
    foreign_requests,
    introduced,
    logged_in_as,
    not_the_users,
    said_values,
    usable_phrasings,
)
from prove_gym.synth.validate import (
    DedupIndex,
    StateHasher,
    call_features,
    replay,
    text_problems,
    untraced_secrets,
)
from prove_gym.synth.writer import LLMWriter
from prove_gym.task import GoldStep, Task, Turn

GENERATOR = "prove_gym.synth/18"
"""Written into every task's ``meta``: /2 added whole abstention tasks (no gold call), the
``knobs.abstention`` field, block states and the text check; /3 leaves distractor servers out
of ``final_state_hash`` unless a call changed their state (see
:meth:`~prove_gym.workspace.Workspace.state_hash`), so tasks with distractors draw fresh
states too; /4 shows failed calls the gold recovers from (steps with ``expect_error``) and
records each gold result's outcome (``meta.outcomes``: success / partial / failure); /5 gives
up calls that fail on the state (a failed attempt last in its turn, ``give_up`` in
``meta.recoveries``); /6 puts references and omissions only where a noun phrase reads
("where is my the first order" and "sell 10 the same instrument" are gone); /7 draws a
chain again instead of running it when its planned calls are already a near duplicate of a
kept task or of an earlier candidate of its block, or when a clarify candidate's turns have
no value to leave out, and drops a block's candidate that repeats an earlier one of the
block (the task format is unchanged); /8 strips an enum from the descriptions too (and
keeps it where the tool's own description states its values), splits train and test by
state per server so that every server with tasks on two states has test tasks, and gives
a server's first block two states, taken in turn by the candidates; /9 drops a chain that
undoes or repeats its own write; /10 asks a clarify turn only for the calls that need the
value it leaves out (the others follow once it is given), leaves a value out with its
preposition instead of saying "some <parameter>", and names a parameter as a user would
("the duration", 90 minutes; not "the duration minutes"), and says a date-time as people do
("at 5 pm on August 15, 2026", not "2026-08-15T17:00") and a snake_case choice as words
("in progress", not "in_progress"); a conversation logs in once, and says "the new X" only
after a call that made that X; /11 draws the values a tool declares with ``values=`` last,
from the call as drawn so far (a bid near the listing's minimum bid, a text that fits the
file's type, an address made of the person's name and company, a dish of the restaurant's
own menu), refers to an entity only as the conversation's
:class:`~prove_gym.synth.knowledge.Knowledge` allows ("that X" for the one X in play,
"the Nth X in those results" for the one list of Xs, else its id), drops a candidate
that would state an id before the user could know it (``unknowable_value``), never hides a
tool for an abstention turn while an offered one declares it can stand in for it
(``stands_in_for``), draws half of the irrelevant requests from the server's own
``out_of_scope`` ones, starts a block's target weights from the tools its view's kept tasks
call, and, past a server's quota, swaps in tasks that call a tool no kept gold calls (the
collector's coverage blocks), and runs blocks of 7 candidates (from 25), each on a fresh
state of its own, so 1,000 tasks start from over 250 distinct states instead of about 100
(the task format is unchanged); /12 and /13 add the value sources, personas and flaw checks
docs/synthesis.md describes (/13: one persona per conversation, no no-op update,
identifiers through their value sources); /14 lets an identifier's source name calls that
make its id fit (:class:`~prove_gym.server.tool.Prepared`: the only file of a folder deleted
before ``rmdir``, an order accepted before ``assign_courier``, an item added before
``place_order``), planned right before the call in the same request, and gives a source the
ids the conversation allows (``Bound.choices``: the customer's own orders), so every tool is
in the gold of 1,000 tasks at seeds 0, 1, 41, 77, 2026 and 4343; it also counts "the second X
in that list" in the result's list alone (not a header's own id), asks a clarify turn for no
call whose ids the user says as they are and leaves out no value the turn says elsewhere,
tries a hidden tool's request on the state (and takes the call back) so that an abstention
is about a request that makes sense, never ends a chain with a login, and writes a yes/no
question and what follows "I'm customer ..." without "Now" or "Then"; /15 responds to
what others wrote (no +1, "Agreed" or like on one's own message or post, no "what did
people reply to" a message just posted, no reply to a newsletter), files a new note where
notes go, adds no line to a JSON document or a log and only comments into source code,
sorts files of records by their own separator, runs no scene that would change nothing,
changes no field of what the task made (a traveller's passport, a new event's title),
deletes no draft a forward of the task made, and asks no read that looks into something the
conversation made and finds nothing (the places of a list just created) nor reads a message
after replying to it; a turn says "I'm usr_036" once, "that user" is not said while a list
of users shown since holds others (a listing called with no id of its kind is a list), no
command ("popd") is an off-topic request, a login the turn after it does not use (a
hidden tool's request) is dropped, only an open limit order is changed (a cent from its
price), and no text tool, checksum or diff is pointed at a folder; /16 drops a request no
phrasing can state ("Set climate.", "Schedule payment."), leaves out no value that is who
the user is and calls only what the user can own theirs ("one of the menu items"), says the
person a support conversation serves as who it is for ("This is for the customer
cus_083."), spans of minutes in their largest unit ("a day before", not "1440 minutes
before"), books what a read found on the read's terms (a room for the dates its
availability was checked for), drops a hidden tool's request that would undo what the
conversation just did, and a read that finds nothing in what the conversation deleted."""


def _lists_nothing(content: Any) -> bool:
    """Whether a result lists nothing: an empty list, an object with a count (``count``,
    ``total``, ``..._count``) and every count zero and every list empty, or the empty
    text of a file (``head`` of a file just touched).

    >>> _lists_nothing({"list_id": "lst_039", "place_count": 0, "places": []})
    True
    >>> _lists_nothing({"path": "/home/beth/ideas.md", "total_lines": 0, "content": ""})
    True
    >>> _lists_nothing({"event_id": "evt_0301", "invitees": [], "title": "Dentist"})
    False
    """
    if isinstance(content, list):
        return not content
    if not isinstance(content, dict):
        return False
    counts = [
        v
        for k, v in content.items()
        if (k in ("count", "total") or k.endswith("_count"))
        and isinstance(v, int)
        and not isinstance(v, bool)
    ]
    if any(counts) or any(isinstance(v, list) and v for v in content.values()):
        return False
    return bool(counts) or content.get("content") == ""


PLAN_DRAWS = 6
"""Chains a candidate draws before it gives up (see :meth:`Conversation._plan`): drawing
one costs about a fiftieth of running it, and most plans that are near duplicates before
they run still are once they have run (in a 13.5K run: three in four)."""

GIVE_UP_KINDS = frozenset({"precondition_failed", "conflict"})
"""Error kinds of a call the gold may give up: the state, not the arguments, says no."""

_TEXT_DROPS = ("text_gold_mismatch", "untraced_secret")
"""Drop reasons of the text checks: a candidate showing a recovery is rebuilt without it."""


@dataclass
class Candidate:
    """A validated conversation, before near-duplicate filtering and numbering."""

    task: Task
    features: frozenset[str]
    rewrites: Counter[str] = field(default_factory=Counter)
    """What the writer did to its turns: ``accepted``, ``rejected:<reason>``
    (:meth:`~prove_gym.synth.writer.LLMWriter.write`); empty for template text."""


@dataclass(frozen=True)
class View:
    """What the collector had kept of a server when a block starts: the tasks kept and the
    mix kinds already full, from every block before it but the ``SynthConfig.view_lag - 1``
    right before it.

    Both only grow, so a candidate the view rejects the collector would reject too: a
    block skips the kinds that are full and drops a near duplicate of a kept task
    before building its text and replaying it. The view is a function of the config,
    the server and the block (the collector takes blocks in order), so the output still
    does not depend on where or how many blocks run at once.
    """

    kept: tuple[frozenset[str], ...] = ()
    full: frozenset[str] = frozenset()
    used: tuple[tuple[str, int], ...] = ()
    """How many gold calls of the kept tasks call each tool, by name (only tools called at
    all): a block's target and step weights start from them, so a tool that earlier blocks
    left out is drawn first, not only the tools its own block has not drawn yet."""
    only: tuple[str, ...] = ()
    """Past the server's quota, the tools no kept gold calls: the block targets only them
    (the collector keeps only candidates that call one, in place of a kept task)."""


class BlockDedup:
    """What a block's candidates are checked against for near duplicates: the tasks of
    its view, then the block's own candidates so far.

    The collector takes a block's candidates in order, so a near duplicate of an
    earlier candidate of the block is dropped unless that one was (rarely: a kind
    already full, or a near duplicate of a task the view had not seen yet).
    """

    def __init__(self, view: DedupIndex) -> None:
        self.view = view  # shared by the server's blocks (ServerContext.dedup_index): read only
        self.own = DedupIndex(view.threshold)

    def __len__(self) -> int:
        return len(self.view) + len(self.own)

    def near_duplicate(self, feats: frozenset[str]) -> bool:
        return self.view.near_duplicate(feats) or self.own.near_duplicate(feats)

    def add(self, feats: frozenset[str]) -> None:
        self.own.add(feats)


@dataclass
class BlockResult:
    """What one block produced: per candidate, in order, a :class:`Candidate` or a drop reason."""

    server: str
    block: int
    outcomes: list[Candidate | str] = field(default_factory=list)

    @property
    def candidates(self) -> list[Candidate]:
        return [o for o in self.outcomes if isinstance(o, Candidate)]


_STRIPPABLE: dict[tuple[str, tuple[str, ...]], bool] = {}


def has_enums(server: Server, registry: Registry) -> bool:
    """Whether some tool of ``server`` has enum values that stripping can take away."""
    tools = server.visible_tools()
    key = (server.name, tuple(t.name for t in tools))
    if key not in _STRIPPABLE:
        _STRIPPABLE[key] = any(
            stripped_schema(registry.get_tool(f"{server.name}.{t.name}")) is not None for t in tools
        )
    return _STRIPPABLE[key]


def strip_rate(server: Server, registry: Registry, cfg: SynthConfig) -> float:
    """How often a task of ``server`` is drawn with its enums stripped, so that the run's
    share of such tasks is ``cfg.strip_enum_rate``: the servers none of whose tools has an
    enum (email, team_chat, ...) strip only what a distractor brings, so the servers that
    can strip do so proportionally more often (a quarter more when 4 of 20 cannot)."""
    names = resolve_servers(cfg.servers, registry)
    able = [n for n in names if has_enums(registry.get_server(n), registry)]
    if not able or server.name not in able:
        return cfg.strip_enum_rate
    return min(1.0, cfg.strip_enum_rate * len(names) / len(able))


class ServerContext:
    """Per-process, per-server state shared by all blocks: graph, sampler, foreign tools."""

    def __init__(self, server: Server, registry: Registry, cfg: SynthConfig) -> None:
        self.server = server
        self.registry = registry
        self.client = (
            LLMClient(
                cfg.llm_url,
                cfg.llm_model or "",
                api_key=cfg.llm_api_key,
                cache_dir=cfg.cache_dir,
                seed=cfg.seed,
                timeout=cfg.llm_timeout,
            )
            if cfg.llm_url
            else None
        )
        self.writer = (
            LLMWriter(self.client) if cfg.writer == "llm" and self.client is not None else None
        )
        self.graph = build_graph(server)
        if cfg.llm_graph and self.client is not None:
            self.graph = refine_graph(server, self.client, self.graph, cache_dir=cfg.cache_dir)
        self._sessions: dict[tuple[int, int], Session] = {}
        self._scratch: dict[tuple[int, int], Session] = {}
        self.seed_pool = cfg.seed_pool()
        self.sampler = ChainSampler(server, self.graph)
        self.tools: dict[str, ToolSpec] = {t.name: t for t in server.visible_tools()}
        self.profiles = {t.name: ToolProfile.of(t) for t in server.visible_tools()}
        # what an abstention turn may hide: a tool no offered tool stands in for (every
        # other tool of the server is offered beside a hidden one)
        self.hideable: list[str] = [t for t in self.tools if not server.stand_ins(t)]
        self.lint = LintReader(registry)  # what prove-gym lint-data reads a task as
        own = set(server.tools)
        self.foreign: list[ToolSpec] = [
            t
            for name, other in registry.servers.items()
            if name != server.name
            for t in other.visible_tools()
            if t.name not in own
        ]
        self.foreign_phrasings = fillable_phrasings(self.foreign)
        self.strip_rate = strip_rate(server, registry, cfg)
        self._known = DedupIndex(cfg.dedup_threshold)
        self._stripped: dict[str, dict[str, Any] | None] = {}
        producers: dict[str, list[ToolSpec]] = {}
        for t in self.tools.values():
            for kind in sorted(t.returns):
                if is_secret_kind(kind):
                    producers.setdefault(kind, []).append(t)
        # a credential only one tool issues: a step needing it without it gets that tool first
        self.credential_producers = {k: ts[0] for k, ts in producers.items() if len(ts) == 1}

    def stripped_schema(self, qualified: str) -> dict[str, Any] | None:
        """:func:`~prove_gym.synth.enums.stripped_schema` of the tool ``qualified``, worked out
        once per tool: a function of its spec alone (read only; the task's JSON round trip
        copies it)."""
        if qualified not in self._stripped:
            self._stripped[qualified] = stripped_schema(self.registry.get_tool(qualified))
        return self._stripped[qualified]

    def dedup_index(self, kept: tuple[frozenset[str], ...]) -> DedupIndex:
        """The near-duplicate index of ``kept`` (a block's :attr:`View.kept`), which blocks
        only read.

        A server's views only grow (each is a prefix of the next), so the last index is
        extended with the sets it lacks instead of being built again for every block; any
        other ``kept`` gets a new one. Its answers depend only on the sets it holds.
        """
        known = self._known
        n = len(known)
        if n > len(kept) or kept[:n] != known.first(n):  # identical sets compare at once
            known = self._known = DedupIndex(known.threshold)
            n = 0
        for feats in kept[n:]:
            known.add(feats)
        return known

    def scratch(self, seed: int, size: int) -> Session:
        """A second session of (seed, size) at the initial state, for trial replays."""
        key = (seed, size)
        session = self._scratch.pop(key, None)
        if session is None:
            session = self.server.session(seed, size)
        else:
            session.reset()
        self._scratch[key] = session
        while len(self._scratch) > 4:
            self._scratch.pop(next(iter(self._scratch))).close()
        return session

    def session(self, seed: int, size: int) -> Session:
        """This process's session of (seed, size), reset to the initial state.

        Resetting a kept session (deserialising the template) is much cheaper than
        opening and closing one per conversation; a bounded number are kept.
        """
        key = (seed, size)
        session = self._sessions.pop(key, None)
        if session is None:
            session = self.server.session(seed, size)
        else:
            session.reset()
        self._sessions[key] = session
        while len(self._sessions) > 16:
            self._sessions.pop(next(iter(self._sessions))).close()
        return session

    def release(self, seed: int, size: int) -> None:
        """Forget the state (seed, size): its sessions, its entity index and the server's
        cached template, with the hash caches it carries.

        For a block's fresh states once their last block has run: nothing in this process
        uses them again (a block that did would sample the state again, to the same bytes).
        Kept, the thousand states of a 13.5K run held over a gigabyte until the end.
        """
        for cache in (self._sessions, self._scratch):
            session = cache.pop((seed, size), None)
            if session is not None:
                session.close()
        forget_entity_index(self.server.name, seed, size)
        self.server.forget(seed, size)


_CONTEXTS: dict[tuple[int, str, SynthConfig], ServerContext] = {}
_HASHER = StateHasher()


def server_context(server: str, cfg: SynthConfig, registry: Registry) -> ServerContext:
    key = (id(registry), server, cfg)
    ctx = _CONTEXTS.get(key)
    if ctx is None:
        if len(_CONTEXTS) > 64:
            _CONTEXTS.clear()
        ctx = _CONTEXTS[key] = ServerContext(registry.get_server(server), registry, cfg)
    return ctx


def run_block(
    cfg: SynthConfig,
    server: str,
    block: int,
    view: View | None = None,
    *,
    registry: Registry | None = None,
) -> BlockResult:
    """Generate one block of candidate conversations for ``server`` (deterministic).

    ``view`` is what the collector had kept when the block started (see :class:`View`;
    none: nothing yet). The result is a function of the arguments alone.
    """
    with rare_collections():
        return _run_block(cfg, server, block, view or View(), registry or get_registry())


def _run_block(
    cfg: SynthConfig, server: str, block: int, view: View, registry: Registry
) -> BlockResult:
    sc = server_context(server, cfg, registry)
    rng = random.Random(stable_int("synth-block", cfg.seed, server, block))
    counts: Counter[str] = Counter(dict(view.used))
    tries: Counter[str] = Counter()
    lessons = Lessons()
    out = BlockResult(server, block)
    default = sc.server.default_size
    states = [(seed, size or default) for seed, size in cfg.block_state_list(server, block)]
    known = BlockDedup(sc.dedup_index(view.kept))
    levels: Counter[str] = Counter()
    abstentions = 0
    for i in range(cfg.block_size):
        cid = f"{server}-b{block}-{i}"
        weights = level_weights(cfg.info_levels, levels)
        open_weights = [
            0.0 if lv in view.full else w for lv, w in zip(LEVELS, weights, strict=True)
        ]
        if any(open_weights):  # else every level is full: such candidates end at once
            weights = open_weights
        due = "abstention" not in view.full and abstention_due(
            cfg.abstention_rate, abstentions, levels.total()
        )
        conv = Conversation(
            sc,
            cfg,
            rng,
            counts,
            tries,
            cid,
            lessons,
            states,
            weights,
            due,
            known,
            view.full,
            i,
            only=view.only,
        )
        result = conv.build()
        out.outcomes.append(result)
        if isinstance(result, Candidate):
            known.add(result.features)
            counts.update(result.task.meta["chain"])
            if result.task.meta["knobs"]["abstention"]:
                abstentions += 1
            else:
                levels[result.task.meta["info_level"]] += 1
    if cfg.last_block_of_states(block):
        for seed, size in states:
            sc.release(seed, size)
    return out


ABSTENTION_MARGIN = 1.5
"""How far a block's abstention tasks may run ahead of their share (see :func:`abstention_due`)."""


def _planned_args(tool: ToolSpec) -> dict[str, None]:
    """The argument names a call of ``tool`` is sure to have, for its features: the
    required parameters, and a credential (always sent once issued)."""
    return {
        p.name: None
        for p in tool.params
        if p.required or (p.entity is not None and is_secret_kind(p.entity.name))
    }


def abstention_due(rate: float, abstentions: int, others: int) -> bool:
    """Whether a block's next candidate may be a whole abstention task.

    A block draws abstention tasks at ``rate`` per candidate, but most tool-calling
    candidates are dropped (error rate, duplicates) and abstention tasks almost never
    are: drawn freely, four are built for every one the collector keeps. So a draw is
    taken only while the block's abstention candidates stay under ``ABSTENTION_MARGIN``
    times their share of its candidates so far; the margin keeps the collector from
    running short of them, which would cost whole blocks.

    >>> abstention_due(0.08, 0, 0)
    True
    >>> abstention_due(0.08, 1, 5), abstention_due(0.08, 1, 8)
    (False, True)
    """
    return abstentions < ABSTENTION_MARGIN * rate * (abstentions + others + 1)


LEVELS = ("complete", "missing", "minimal")


def level_weights(shares: tuple[float, float, float], kept: Counter[str]) -> list[float]:
    """Draw weights of the information levels for a block's next candidate.

    Each level's configured share plus what it lags behind that share among the
    block's candidates so far: ``missing`` candidates fail more often than the
    others, and without the push would end below their share.

    >>> level_weights((0.6, 0.2, 0.2), Counter())  # the shares, in proportion
    [1.2, 0.4, 0.4]
    >>> [round(w, 2) for w in level_weights((0.6, 0.2, 0.2), Counter(complete=4))]
    [0.6, 1.2, 1.2]
    """
    total = sum(shares) or 1.0
    n = sum(kept.values()) + 1
    return [
        share + max(0.0, share / total * n - kept[level])
        for level, share in zip(LEVELS, shares, strict=True)
    ]


class Conversation:
    """Builds one candidate; :meth:`build` returns a :class:`Candidate` or a drop reason.

    After :meth:`build`, ``trace`` holds every call it executed as ``(tool, arguments,
    result)``, failed ones included: what to read when a server's drops are high.
    """

    def __init__(
        self,
        sc: ServerContext,
        cfg: SynthConfig,
        rng: random.Random,
        counts: Counter[str],
        tries: Counter[str],
        cid: str,
        lessons: Lessons | None = None,
        states: list[tuple[int, int]] | None = None,
        level_weights: list[float] | None = None,
        abstention_due: bool = True,
        known: BlockDedup | DedupIndex | None = None,
        full: frozenset[str] = frozenset(),
        index: int = 0,
        only: tuple[str, ...] = (),
    ) -> None:
        self.sc = sc
        self.index = index  # the candidate's place in its block
        self.known = known
        self.full = full
        self.only = only  # the tools to target (View.only), or any
        self.states = states or []
        self.level_weights = level_weights
        self.abstention_due = abstention_due
        self.lessons = lessons if lessons is not None else Lessons()
        # the final state's (bytes, hash), once the chain has run (see build)
        self.recorded: tuple[bytes, str] = (b"", "")
        self.withheld: list[str] = []  # what a clarify turn leaves out, as the user says it
        self._missing_pool: list[tuple[int, str]] | None = None
        self._snap: tuple[int, bytes] | None = None  # (changes counted, state bytes)
        self.cfg = cfg
        self.rng = rng
        self.counts = counts
        self.tries = tries
        self.cid = cid

    # ---------------------------------------------------------------- knobs
    def _knobs(self) -> None:
        cfg, rng = self.cfg, self.rng
        pool_seed = rng.choice(self.sc.seed_pool)
        # the block's states in turn, so a block of few candidates still uses each
        fresh = self.states[self.index % len(self.states)] if self.states else None
        self.level = weighted_choice(rng, list(LEVELS), self.level_weights or list(cfg.info_levels))
        n_turns = rng.randint(*cfg.turns)
        self.irrelevant = rng.random() < cfg.irrelevant_rate
        self.missing_tool = rng.random() < cfg.missing_tool_rate
        self.distract = rng.random() < cfg.distractor_rate
        self.strip = rng.random() < self.sc.strip_rate
        # drawn on every candidate (the block's random stream does not depend on it), but
        # only taken while the block's abstention tasks lag their share (see run_block)
        self.abstain_only = rng.random() < cfg.abstention_rate and self.abstention_due
        # a distractor server's state is never sampled (it is not in the task's hash), so
        # tasks with distractors draw fresh states like the others
        if fresh is None:
            self.seed = pool_seed
            self.size = cfg.size if cfg.size is not None else self.sc.server.default_size
        else:
            self.seed, self.size = fresh
        extras = (self.level == "missing") + self.irrelevant
        self.n_seg = max(1, n_turns - extras)
        if self.missing_tool and self.n_seg < 2:
            if self.n_seg + 1 + extras <= cfg.turns[1]:
                self.n_seg = 2
            else:
                self.missing_tool = False
        lo, hi = cfg.chain_lengths
        self.n_seg = min(self.n_seg, hi)
        lengths = [n for n in range(lo, hi + 1) if n >= self.n_seg] or [hi]
        weights = list(cfg.length_weights) or [1.0] * (hi - lo + 1)
        self.length = weighted_choice(rng, lengths, [weights[n - lo] for n in lengths])

    def _target(self, among: list[str] | None = None) -> str:
        names = list(self.sc.tools) if among is None else among
        if among is None and self.only:
            names = list(self.only)
        weights = [1.0 / (1.0 + self.counts[t] + 0.5 * self.tries[t]) ** 2 for t in names]
        target = weighted_choice(self.rng, names, weights)
        self.tries[target] += 1
        return target

    def _weight(self, tool: str) -> float:
        return 1.0 / (1.0 + self.counts[tool])

    # ---------------------------------------------------------------- build
    def build(self) -> Candidate | str:
        with date_style(self.cid):  # one way of writing dates in a conversation
            return self._build()

    def _build(self) -> Candidate | str:
        rng, sc = self.rng, self.sc
        self._knobs()
        kind = "abstention" if self.abstain_only else self.level
        if kind in self.full:
            return f"share_full:{kind}"  # the collector would drop it: build nothing
        if self.abstain_only:
            return self._abstention()
        plan = self._plan()
        if isinstance(plan, str):
            return plan
        self.renderer = Renderer(rng, self.level)
        size = self.size
        offered = [t.qualified_name for t in sc.server.visible_tools() if t.name != self.hidden]
        self.session = sc.session(self.seed, size)
        self.renderer.me = self._me(sc.server)
        self.renderer.not_mine = not_the_users(sc.server, self.renderer.me)
        self.renderer.persona = frozenset(sc.server.persona)
        outcome = self._execute(plan)
        if isinstance(outcome, str):
            return outcome
        self._resegment()
        self.features = self._features()
        if self.known is not None and self.known.near_duplicate(self.features):
            return "near_duplicate"  # as the collector would find it: no text, no replay
        if self.level == "missing" and not self._missing_params():
            return "no_missing_value"  # the turn's first call has no value to leave out
        self._record_final_state()
        built = self._assemble(offered, recover=True)
        if isinstance(built, str) and self.shown and built.startswith(_TEXT_DROPS):
            # the attempt or an unsaid repair disagrees with the text: show the direct calls
            built = self._assemble(offered, recover=False)
        return built

    def _plan(self) -> list[PlannedStep] | str:
        """Draw the chain and cut it into turns; a drop reason when no draw is worth running.

        Up to :data:`PLAN_DRAWS` chains are drawn. One is drawn again when its planned
        calls are already a near duplicate of a kept task
        (:meth:`_plan_near_duplicate`), or when it is a ``missing`` candidate whose
        turns have no value to leave out (the collector would drop either once it ran).
        """
        cfg, rng, sc = self.cfg, self.rng, self.sc
        n_seg, missing_tool = self.n_seg, self.missing_tool
        reason = ""
        for _ in range(PLAN_DRAWS):
            self.n_seg, self.missing_tool = n_seg, missing_tool
            plan = sc.sampler.sample(rng, self._target(), self.length, self._weight)
            if len(plan) < max(2, cfg.chain_lengths[0]):
                return "short_chain"
            self.n_seg = min(self.n_seg, len(plan))
            self.hidden = self._hidden(plan)
            if self._plan_near_duplicate(plan):
                reason = "near_duplicate:plan"
                continue
            if sum(bool(LOGIN.match(s.name)) for s in plan) > 1:
                reason = "second_login:plan"  # one user logs in once
                continue
            if LOGIN.match(plan[-1].name):
                reason = "idle_login:plan"  # a login is for what comes after it
                continue
            # the hidden tool's request is a turn of its own: the last step, alone
            body = plan[:-1] if self.hidden is not None else plan
            n_body = self.n_seg - 1 if self.hidden is not None else self.n_seg
            cuts = sorted(rng.sample(range(1, len(body)), n_body - 1))
            seg = 0
            for i, step in enumerate(body):
                if seg < len(cuts) and i >= cuts[seg]:
                    seg += 1
                step.segment = seg
            if self.hidden is not None:
                plan[-1].segment = self.n_seg - 1
            self.clarify_plan = self._plan_clarify(plan) if self.level == "missing" else None
            if self.level == "missing" and self.clarify_plan is None:
                reason = "no_missing_value:plan"
                continue
            return plan
        return reason

    def _plan_near_duplicate(self, plan: list[PlannedStep]) -> bool:
        """Whether the planned calls are already a near duplicate of a kept task (or of an
        earlier candidate of the block), by the features they are sure to have.

        Never under ``dedup="values"``: those features hold argument values, which are
        not drawn before the chain runs.
        """
        if self.known is None or not len(self.known) or self.cfg.dedup == "values":
            return False
        return self.known.near_duplicate(self._plan_features(plan))

    def _plan_features(self, plan: list[PlannedStep]) -> frozenset[str]:
        """The near-duplicate features a chain is sure to have before it runs.

        Each planned call with its required arguments and its credential, the bigrams and
        the special turns (:meth:`_features` once it has run). A step that needs a
        credential nothing before it issued gets the one tool that issues it first, as
        the refusal's repair will. A tool with parameters but none of them sure adds
        only its bigrams (it will be sent some, not yet known). Optional arguments the
        grounder adds and the repairs other refusals bring are not foreseen.
        """
        steps: list[tuple[str, dict[str, None]]] = []
        held: set[str] = set()
        for step in plan:
            for entity in step.tool.entity_params.values():
                kind = entity.name
                producer = self.sc.credential_producers.get(kind)
                if producer is not None and kind not in held:
                    steps.append((producer.name, _planned_args(producer)))
                    held.update(producer.returns)
            steps.append((step.name, _planned_args(step.tool)))
            held.update(step.tool.returns)
        unsure = {f"{name}()" for name, args in steps if not args and self.sc.tools[name].params}
        return call_features(steps, self._special_turns()) - unsure

    def _resegment(self) -> None:
        """Re-cut the executed steps when repairs pushed planned steps (and turns) out."""
        executed = [d for d in self.done if d.executed]
        want = self.n_seg - (1 if self.hidden is not None else 0)
        if len({d.segment for d in executed}) >= want or len(executed) < want:
            return
        cuts = sorted(self.rng.sample(range(1, len(executed)), want - 1))
        seg = 0
        for i, d in enumerate(executed):
            if seg < len(cuts) and i >= cuts[seg]:
                seg += 1
            d.segment = seg

    def _hidden(self, plan: list[PlannedStep]) -> str | None:
        """The tool to hide: the chain's last, if no earlier step needs it too and no
        offered tool stands in for it (``stands_in_for``: its request could be served)."""
        if not self.missing_tool or self.n_seg < 2 or len(plan) < self.n_seg:
            self.missing_tool = False
            return None
        last = plan[-1].name
        if any(s.name == last for s in plan[:-1]) or last not in self.sc.hideable:
            self.missing_tool = False
            return None
        return last

    def _plan_clarify(self, plan: list[PlannedStep]) -> tuple[int, int] | None:
        """(planned step index, segment) whose required value will be left out."""
        options = []
        for i, step in enumerate(plan):
            if self.hidden is not None and step.segment == self.n_seg - 1:
                continue
            if i > 0 and plan[i - 1].segment == step.segment:
                continue  # asking must be the whole right move: nothing doable before it
            for p in step.tool.params:
                if not p.required:
                    continue
                if p.entity is not None:
                    kind = p.entity.name
                    if is_secret_kind(kind) or any(kind in s.tool.returns for s in plan[:i]):
                        continue
                options.append((i, step.segment))
        return self.rng.choice(options) if options else None

    def _me(self, server: Server) -> dict[str, str]:
        """Who the user is in this conversation's state (``Server(me=...)``), ids by kind."""
        if server.me is None:
            return {}
        try:
            return {kind: str(v) for kind, v in server.me(self.session.context()).items()}
        finally:
            self.session.rollback()

    # -------------------------------------------------------------- execute
    def _execute(self, plan: list[PlannedStep]) -> str | None:
        """Run the chain, grounding each step just before it runs; a drop reason or None."""
        self.grounder = Grounder(self.session, entity_index(self.session), self.rng)
        self.done: list[DoneStep] = []
        self.phrasings: dict[int, str | None] = {}
        self.clarify_step: int | None = None
        self.context: dict[str, Any] = {}
        self.calls = self.failures = 0
        self.trace: list[tuple[str, dict[str, Any], ToolResult]] = []
        self.queue: list[tuple[PlannedStep, dict[str, Any]]] = [(s, {}) for s in plan]
        # keyed by the steps themselves (identity: PlannedStep has eq=False), never by id():
        # an id can be reused once its object is gone
        self.fixes_for: dict[PlannedStep, list[PlannedStep]] = {}
        self.fix_steps: set[PlannedStep] = set()
        self.plan_steps = set(plan)
        self.prepared: set[PlannedStep] = set()  # steps calls were planned before
        self.done_index: dict[PlannedStep, int] = {}
        # each step's failed calls: (arguments, result, whether a repair was scheduled)
        self.failed_calls: dict[PlannedStep, list[tuple[dict[str, Any], ToolResult, bool]]] = {}
        clarify_target = plan[self.clarify_plan[0]] if self.clarify_plan else None
        self.clarify_target = clarify_target
        while self.queue:
            step, hints = self.queue.pop(0)
            if self.hidden is not None and step.segment == self.n_seg - 1:
                reason = self._ground_only(step)
            else:
                reason = self._run(step, hints)
            if reason == "requeued":
                continue
            if reason is not None:
                return reason
            if step is clarify_target:
                self.clarify_step = len(self.done) - 1
        return None

    def _record_final_state(self) -> None:
        """Keep the executed chain's final state, as bytes and hash (:attr:`recorded`)."""
        state = self._state_bytes()
        self.recorded = (state, _HASHER.session_hash(self.session, state))

    def _state_bytes(self) -> bytes:
        """The session's state serialised (:meth:`Session.snapshot`), taken again only
        once SQLite has counted a row changed since the last time: reads, and writes
        that change no row, leave the bytes as they were."""
        changes = self.session.raw_connection.total_changes
        if self._snap is None or self._snap[0] != changes:
            self._snap = (changes, self.session.snapshot())
        return self._snap[1]

    def _with_hidden_request(self, task: Task) -> Any | None:
        """``task`` read by lint as if the hidden tool's request were a gold call of its
        turn (``None`` when no tool is hidden): a request it would be right to make, were
        the tool there, does not undo what the conversation just did."""
        if self.hidden is None:
            return None
        asked = next((d for d in reversed(self.done) if not d.executed), None)
        if asked is None:
            return None
        data = task.model_dump(mode="json")
        turn = next(
            (t for t in reversed(data["turns"]) if t["kind"] == "abstain" and not t["steps"]),
            None,
        )
        if turn is None:
            return None
        ids = getattr(self, "_gold_ids", {})
        needs = [ids["call", j] for j in sorted(set(asked.links.values())) if ("call", j) in ids]
        turn["steps"] = [
            {
                "id": "hidden",
                "name": asked.tool.name,
                "arguments": dict(asked.args),
                "depends_on": needs,  # "the new cart line": what it takes from a result
            }
        ]
        data["tools"] = [*data["tools"], asked.tool.qualified_name]  # its declarations
        return self.sc.lint.read(data)

    def _ground_only(self, step: PlannedStep) -> str | None:
        """A step of the turn that asks for a hidden tool: arguments for its text, and a
        call that would succeed were the tool offered, tried and taken back (not "change
        the new order to 65 shares at 99.99" for a market order that filled): the model
        is right to say it cannot, not that the request makes no sense."""
        phrasing = self.renderer.plan_phrasing(step.tool)
        extra = self.renderer.extra_optionals(step.tool, phrasing)
        reason = ""
        for _ in range(max(1, self.cfg.max_attempts)):
            g = self.grounder.ground(step, self.done, self.context, extra=extra)
            if g.unresolved:
                return f"ungroundable:{step.name}.{g.unresolved}"
            before, changes = self._state_bytes(), self.session.raw_connection.total_changes
            result = self.session.call(step.name, g.args)
            if self.session.raw_connection.total_changes != changes:
                self.session.restore(before)
            if result.ok:
                break
            reason = f"hidden_fails:{step.name}"
        else:
            return reason
        self.done.append(
            DoneStep(step.tool, g.args, g.links, segment=step.segment, executed=False, plan=step)
        )
        self.phrasings[len(self.done) - 1] = phrasing
        return None

    def _run(self, step: PlannedStep, hints: dict[str, Any]) -> str | None:
        """Draw, call, and on failure retry or repair; ``"requeued"`` after scheduling a fix."""
        banned: set[str] = set()
        add: set[str] = set()
        drop: set[str] = set()
        tool = step.tool
        noop = False
        for attempt in range(self.cfg.max_attempts):
            if self.calls >= 4 * self.cfg.chain_lengths[1]:
                return "too_many_calls"
            phrasing = self.renderer.plan_phrasing(tool)
            extra = (self.renderer.extra_optionals(tool, phrasing) | add) - drop
            # a retry draws afresh: hints only on the first try, optional inputs thinned
            drawn = step if attempt == 0 else self._thinned(step, drop)
            g = self.grounder.ground(
                drawn,
                self.done,
                self.context,
                extra=extra,
                hints=hints if attempt == 0 else None,
                banned=banned,
                lessons=self.lessons,
                prepare=self._may_prepare(step),
            )
            if g.unresolved:
                return f"ungroundable:{step.name}.{g.unresolved}"
            if g.prepared is not None:
                return self._prepare(step, g)
            before = self._state_bytes() if tool.writes else None
            result = self.session.call(step.name, g.args)
            self.calls += 1
            self.trace.append((step.name, g.args, result))
            if result.ok and before is not None and self._state_bytes() == before:
                # a write that changes nothing (already on, already there) teaches nothing:
                # draw other arguments; it is not an error, so the error rate is untouched
                noop = True
                continue
            if result.ok:
                self._record(step, g, result, phrasing)
                return None
            self.failures += 1
            if attempt == 0 and self._gives_up(step, g.args, result):
                self._record(step, g, result, phrasing, given_up=True)
                self.queue.clear()  # the conversation ends with the turn that gave up
                return None
            failed = (dict(g.args), result, False)
            self.failed_calls.setdefault(step, []).append(failed)
            message = result.message or ""
            banned |= self.lessons.learn(tool, g, message, self.grounder.index)
            # optional parameters the message names: one too many, or one missing
            named = [
                p.name
                for p in tool.params
                if not p.required and re.search(rf"\b{re.escape(p.name)}\b", message)
            ]
            present = [n for n in named if n in g.args]
            if present:
                gone = self.rng.choice(present)
                drop.add(gone)
                add.discard(gone)
            elif named:
                new = self.rng.choice(named)
                add.add(new)
                drop.discard(new)
            if self._repair(step, g.args, message):
                self.failed_calls[step][-1] = (*failed[:2], True)
                return "requeued"
        return f"noop_write:{step.name}" if noop else f"step_failed:{step.name}"

    def _derivable(self, d: DoneStep) -> bool:
        """Whether a model could make the writes that repair ``d``'s failed attempt from
        what the attempt sent and its error said: every argument of each repairing write
        is one of the attempt's values or named in the message ("Slow to 0 with set_speed
        (speed_kph=0)"). Not when the repair takes a value nobody gave: "the cart is
        empty, add items with add_to_cart" repaired by adding var_00032, an item the user
        never asked to buy."""
        assert d.failed is not None
        tried, result = d.failed
        message = (result.message or "")[:2000]
        named = set(re.findall(r"[\w.@+-]+", message)) | {str(v) for v in tried.values()}
        for j in d.repairs:
            repair = self.done[j]
            if not repair.tool.writes:
                continue  # a read finds what it needs
            for value in repair.args.values():
                for v in value if isinstance(value, list) else [value]:
                    said = str(v)
                    if said not in named and not (" " in said and said in message):
                        return False
        return True

    @staticmethod
    def _contradicted(d: DoneStep) -> bool:
        """Whether ``d``'s failed attempt has a wrong value the user's own words would
        contradict: a value the retry (or the call after a repair) corrects that the request
        states as it is (not through a reference: "take var_00141 out of the cart" tried
        first with var_00004, the line just removed; "sell 20 shares of F" tried first with
        BA). A model that did what it was told would never make it."""
        assert d.failed is not None
        tried, _ = d.failed
        return any(k not in d.links and tried.get(k) != v for k, v in d.args.items())

    def _within_error_rate(self, failed: int, calls: int) -> bool:
        """Whether a gold whose ``calls`` include ``failed`` failing ones is kept
        (``max_error_rate``)."""
        return not calls or failed / calls <= self.cfg.max_error_rate

    def _gives_up(self, step: PlannedStep, args: Mapping[str, Any], result: ToolResult) -> bool:
        """Whether the gold gives up this failed call (see ``SynthConfig.give_up_rate``).

        Only a planned step's first call, as the user asked for it, failing on the state
        (``GIVE_UP_KINDS``) as it does on the initial state (the conversation did not
        bring the failure about), with no tool the error names as a fix; never in a clarify
        task or one whose last turn asks for a hidden tool (the give-up ends the
        conversation), and only where the gold's error rate stays within
        ``max_error_rate`` (a failed call among the calls made before it and itself).
        Drawn from the candidate and the step, so candidates without such a failure
        keep the block's random stream as it was.
        """
        if (
            not self.cfg.give_up_rate
            or not self._within_error_rate(1, len(self.done) + 1)
            or result.error_kind not in GIVE_UP_KINDS
            or self.level == "missing"
            or self.hidden is not None
            or step not in self.plan_steps
            or step in self.fixes_for
            or repair_tools(result.message or "", step.tool, self.sc.tools)
        ):
            return False
        draw = stable_int("give-up", self.cid, len(self.done)) % 1_000_000 / 1_000_000
        if draw >= self.cfg.give_up_rate:
            return False
        # the state said no before the conversation began, not because of it: never "quote
        # a change to a booking" on the itinerary the user just cancelled
        before = self.sc.scratch(self.seed, self.size).call(step.name, dict(args))
        return not before.ok and before.error_kind == result.error_kind

    def _may_prepare(self, step: PlannedStep) -> bool:
        """Whether calls may be planned right before ``step`` to bring about the state its
        identifier needs (:class:`~prove_gym.server.tool.Prepared`): a planned step, not a
        repair, prepared once at most, and not the call a clarify turn asks for (nothing
        in its turn may be doable before the question)."""
        return (
            step in self.plan_steps
            and step not in self.fix_steps
            and step not in self.prepared
            and (self.clarify_plan is None or step is not self.clarify_target)
        )

    def _prepare(self, step: PlannedStep, g: Grounded) -> str:
        """Plan the calls ``g.prepare`` names right before ``step``, as part of its request
        (the user asks for them: "Delete ~/old/notes.txt. Then remove the empty folder
        ~/old."), then ``step`` again with the id its source chose; ``"requeued"``, or the
        step's ``ungroundable`` drop when the chain has no room for them."""
        assert g.prepared is not None
        param, prepared = g.prepared
        firsts = [
            (name, dict(args)) for name, args in prepared.first if name in self.sc.sampler.specs
        ]
        if len(firsts) != len(prepared.first) or not self._make_room(step, len(firsts)):
            return f"ungroundable:{step.name}.{param}"
        self.prepared.add(step)
        new_steps = []
        for name, args in firsts:
            first = self.sc.sampler.new_step(self.rng, name)
            first.segment = step.segment
            self.plan_steps.add(first)
            new_steps.append((first, args))
        self.queue[:0] = [*new_steps, (step, {param: g.args[param]})]
        return "requeued"

    def _make_room(self, step: PlannedStep, n: int) -> bool:
        """Drop trailing planned steps of the queue until ``n`` more calls before ``step``
        (and ``step`` itself, again) fit the longest chain; whether they do. Never drops the
        request for the hidden tool, a step with fixes, or ``step``."""
        hi = self.cfg.chain_lengths[1]
        keep_last = self.hidden is not None and bool(self.queue)
        while len(self.done) + len(self.queue) + 1 + n > hi:
            at = len(self.queue) - (2 if keep_last else 1)
            if at < 0:
                break
            last = self.queue[at][0]
            if last not in self.plan_steps or last in self.fixes_for or last is step:
                break
            del self.queue[at]
        return len(self.done) + len(self.queue) + 1 + n <= hi

    def _repair(self, step: PlannedStep, args: dict[str, Any], message: str) -> bool:
        """Schedule the tools an error message names as fixes, then the step again."""
        sc = self.sc
        if step in self.fix_steps:
            return False  # a fix is not repaired in turn
        tried = {f.name for f in self.fixes_for.get(step, [])}
        logged_in = any(LOGIN.match(d.name) for d in self.done)
        fixes = [
            t
            for t in repair_tools(message, step.tool, sc.tools)
            if t not in tried and t != self.hidden and not (logged_in and LOGIN.match(t))
        ]
        if not fixes:
            return False
        # a fix outranks the planned tail: drop trailing planned steps to make room
        # (never the request for the hidden tool, which is a turn of its own)
        if not self._make_room(step, len(fixes)):
            return False
        new_steps = []
        renewed: set[str] = set()
        for name in fixes:
            fix = sc.sampler.new_step(self.rng, name)
            fix.segment = step.segment
            self.fix_steps.add(fix)
            new_steps.append((fix, {**args, **message_hints(message, sc.tools[name])}))
            renewed.update(sc.tools[name].returns)
        self.fixes_for.setdefault(step, []).extend(f for f, _ in new_steps)
        # once its fix has run, the failing call is retried with the same values,
        # except those the fix issues afresh (a new token)
        entities = step.tool.entity_params
        kept = {
            k: v for k, v in args.items() if k not in entities or entities[k].name not in renewed
        }
        self.queue[:0] = [*new_steps, (step, kept)]
        return True

    def _record(
        self,
        step: PlannedStep,
        g: Grounded,
        result: ToolResult,
        phrasing: str | None,
        *,
        given_up: bool = False,
    ) -> None:
        produced, listed = self.grounder.found(step.tool, result.content)
        done = DoneStep(
            step.tool,
            g.args,
            g.links,
            result.content,
            produced,
            step.segment,
            True,
            plan=step,
            result=result,
            given_up=given_up,
            listed=listed,
        )
        done.repairs = [
            self.done_index[f] for f in self.fixes_for.get(step, []) if f in self.done_index
        ]
        done.failed = self._recoverable(step, g.args, done.repairs)
        self.done.append(done)
        self.done_index[step] = len(self.done) - 1
        # who the user is, from then on
        self.grounder.settle(step.tool, g.args, g.records, done.produced)
        self.phrasings[len(self.done) - 1] = phrasing
        for rec in g.records:
            for k, v in rec.items():
                if not isinstance(v, dict | list):
                    self.context[k] = v
        for p in step.tool.params:
            if p.entity is not None and p.name in g.args:
                self.context[p.name] = g.args[p.name]

    def _recoverable(
        self, step: PlannedStep, args: dict[str, Any], repairs: list[int]
    ) -> tuple[dict[str, Any], ToolResult] | None:
        """The step's failed attempt, when its error explains the recovery that followed.

        One failure only, and either *repair* (its message named the tools that ran before
        the successful call) or *retry* (the successful call corrects the failed one's
        arguments: every parameter it adds, drops or changes is one the message names).
        A fix is never shown failing.
        """
        failed = self.failed_calls.get(step, [])
        if len(failed) != 1 or step in self.fix_steps:
            return None
        tried, result, repaired = failed[0]
        if repaired:
            return (tried, result) if repairs else None
        corrected = sorted(
            k for k in args.keys() | tried.keys() if k not in args or args.get(k) != tried.get(k)
        )
        message = result.message or ""
        if not corrected or not all(re.search(rf"\b{re.escape(k)}\b", message) for k in corrected):
            return None
        return tried, result

    def _thinned(self, step: PlannedStep, drop: set[str]) -> PlannedStep:
        """A copy of ``step`` keeping each optional input with p = 0.5 (some combinations clash).

        Credentials are always kept: without one the call cannot succeed. The inputs are drawn
        for in sorted order: a set's order follows ``PYTHONHASHSEED``, and so would the task.
        """
        entities = step.tool.entity_params
        keep = {
            p
            for p in sorted(step.inputs)
            if p not in drop
            and ((p in entities and is_secret_kind(entities[p].name)) or self.rng.random() < 0.5)
        }
        return PlannedStep(step.tool, keep, step.segment)

    # ------------------------------------------------------------- assemble
    def _touch(self, step: DoneStep) -> set[tuple[str, str]]:
        out: set[tuple[str, str]] = set()
        for p, e in step.tool.entity_params.items():
            if p in step.args:
                values = step.args[p] if isinstance(step.args[p], list) else [step.args[p]]
                out.update((e.name, str(v)) for v in values)
        for kind, ids in step.produced.items():
            out.update((kind, str(v)) for v in ids)
        if STATE in self.sc.profiles[step.name].touches:
            out.add((STATE, ""))
        return out

    def _dependencies(self) -> dict[int, set[int]]:
        """The gold edges between executed steps: j -> i where i needs j, and only there.

        An edge means data flow or effect, as the paper's graph does: i uses a value
        first produced by j's result (its links and the repairs made for it), or i
        needs j's effect on state. The effect is not guessed from shared entities: for
        each earlier write j that touches what i touches, the chain is replayed on a
        scratch session (once without j, once with j and i exchanged) and the edge is
        kept only if i's result or the final state then differs. Two calls whose order
        changes nothing get no edge, so a policy that swaps them loses no coverage.
        """
        cached = getattr(self, "_edges", None)
        if cached is not None:
            return cached
        done = self.done
        executed = self._succeeded()
        touches = {k: self._touch(done[k]) for k in executed}
        edges: dict[int, set[int]] = {}
        for i in executed:
            step = done[i]
            deps = {j for j in (set(step.links.values()) | set(step.repairs)) if done[j].executed}
            for j in executed:
                if j >= i or j in deps:
                    continue
                if done[j].tool.writes and touches[j] & touches[i] and self._order_matters(j, i):
                    deps.add(j)
            edges[i] = deps
        self._edges = edges
        return edges

    def _succeeded(self) -> list[int]:
        """Indices of the executed steps that succeeded (a given-up call has no edges)."""
        return [k for k, d in enumerate(self.done) if d.executed and not d.given_up]

    def _order_matters(self, j: int, i: int) -> bool:
        """Whether i's result or the final state changes without j before i (see above)."""
        executed = self._succeeded()
        original = self._recorded_outcome()
        # only i's result is compared here: the steps after i are not run, nor is the
        # state without j hashed
        without = [k for k in executed if k != j]
        if self._outcome(without[: without.index(i) + 1], final_hash=False)[0][i] != original[0][i]:
            return True
        swapped = [i if k == j else j if k == i else k for k in executed]
        exchanged = self._outcome(swapped)
        return exchanged[0].get(i) != original[0][i] or exchanged[1] != original[1]

    def _recorded_outcome(self) -> tuple[dict[int, tuple[Any, ...]], str | None]:
        """What :meth:`_outcome` gives for the executed steps in their own order, without
        running them again: their results as recorded, and the hash of the session's state.

        The session also ran calls that are not among them (failed attempts, a call given
        up, a write that changed nothing, arguments refused while searching), and none of
        those changed the state: a failed call is rolled back, and a write counts as done
        only when the bytes changed. So each executed step met the state it would meet
        after the executed steps before it alone, and the final state is the same.
        """
        results = {}
        for k in self._succeeded():
            r = self.done[k].result
            assert r is not None
            results[k] = (r.ok, r.error_kind, r.content)
        return results, self.recorded[1]

    def _outcome(
        self, order: list[int], *, final_hash: bool = True
    ) -> tuple[dict[int, tuple[Any, ...]], str | None]:
        """Results by step of the executed steps run in ``order``, and the final state's
        hash (``None`` when ``final_hash`` is false: hashing is most of a replay's cost)."""
        key = (tuple(order), final_hash)
        memo: dict[tuple[tuple[int, ...], bool], tuple[dict[int, tuple[Any, ...]], str | None]] = (
            self.__dict__.setdefault("_outcomes", {})
        )
        if key not in memo:
            session = self.sc.scratch(self.seed, self.size)
            results = {}
            for k in order:
                r = session.call(self.done[k].name, self.done[k].args)
                results[k] = (r.ok, r.error_kind, r.content)
            memo[key] = (results, session.state_hash() if final_hash else None)
        return memo[key]

    def _missing_param(self) -> tuple[int, str] | None:
        """(step index, parameter) the clarify turn leaves out: of its turn's first call, so
        nothing in the turn can be done before asking (asking is the whole right move).

        Cleanest first: a value some fitting phrasing has no slot for (it is simply
        not said), then an identifier ("one of my events"), then any other value
        ("some end date").
        """
        pool = self._missing_params()
        return self.rng.choice(pool) if pool else None

    def _missing_params(self) -> list[tuple[int, str]]:
        """The best-ranked (step index, parameter) pairs :meth:`_missing_param` draws from
        (empty when the turn's first call has no value to leave out); a function of the
        executed steps, computed once."""
        if self._missing_pool is not None:
            return self._missing_pool
        if self.clarify_step is None:
            self._missing_pool = []
            return []
        segment = self.done[self.clarify_step].segment
        people = set(self.sc.server.persona) | set(self.renderer.me)
        ranked: tuple[list[tuple[int, str]], list[tuple[int, str]], list[tuple[int, str]]] = (
            [],
            [],
            [],
        )
        for i, step in enumerate(self.done):
            if step.segment != segment or not step.executed:
                continue
            if any(d.segment == segment and d.executed for d in self.done[:i]):
                break  # only the turn's first call: asking first is then unambiguous
            fitting = [set(SLOT.findall(ph)) for ph in usable_phrasings(step.tool, step.args)]
            # values the turn's other calls take: the turn says them ("Show the balances of
            # one of my customers. I'm customer cus_020, ..."), so none is left out
            elsewhere = {
                str(v)
                for j, d in enumerate(self.done)
                if j != i and d.segment == segment
                for v in d.args.values()
                if isinstance(v, str | int) and not isinstance(v, bool)
            }
            for p in step.tool.params:
                if (
                    not p.required
                    or p.name not in step.args
                    or p.name in step.links
                    or str(step.args[p.name]) in elsewhere
                    # a search's text is what it asks for: "Find the portfolios." is no
                    # request with something left out
                    or p.name in ("query", "search")
                    or isinstance(step.args[p.name], bool)
                    or (p.entity is not None and is_secret_kind(p.entity.name))
                    # who the user is is no value to ask for: not "for one of my users"
                    or (p.entity is not None and p.entity.name in people)
                    # "Drive." for "Drive at 0 km/h": without its zero, a request asks
                    # for something else
                    or (isinstance(step.args[p.name], int | float) and not step.args[p.name])
                ):
                    continue
                if any(p.name not in slots for slots in fitting):
                    ranked[0].append((i, p.name))
                elif not can_leave_out(step.tool, step.args, p.name):
                    continue  # "a free some duration minutes-minute slot" is no request
                elif p.entity is not None:
                    ranked[1].append((i, p.name))
                else:
                    ranked[2].append((i, p.name))
        self._missing_pool = ranked[0] or ranked[1] or ranked[2]
        return self._missing_pool

    def _turn_steps(self, omit: tuple[int, str] | None) -> list[tuple[list[int], bool]]:
        """The steps each request asks for, in order, and whether it is the hidden tool's.

        One request per segment, except that a clarify request asks only for the calls
        that need the value it leaves out (``omit``): the call that takes it, and those
        after it in its segment that take the same value or depend on one that does
        (:meth:`_dependencies`), up to the first that does not. The rest of the segment
        is asked for after the value is given, as the start of the next request (or as a
        request of its own when none follows), so the gold order stays the order that
        ran: a model that did the independent part before asking would be right and
        scored wrong, so the two are never mixed.
        """
        done = self.done
        out: list[tuple[list[int], bool]] = []
        for seg in range(self.n_seg):
            idxs = [i for i, d in enumerate(done) if d.segment == seg]
            if idxs:
                out.append((idxs, self.hidden is not None and seg == self.n_seg - 1))
        if omit is None:
            return out
        at = next(k for k, (idxs, _) in enumerate(out) if omit[0] in idxs)
        idxs = out[at][0]
        name, value = omit[1], done[omit[0]].args[omit[1]]
        deps = self._dependencies()
        knowledge = self._knowledge({i: d.segment for i, d in enumerate(done)})
        needs = {omit[0]}
        for i in idxs:
            takes = name in done[i].args and done[i].args[name] == value
            wants = {j for j in deps.get(i, set()) & needs if not self._says(knowledge, i, j)}
            if done[i].executed and (takes or wants):
                needs.add(i)
        cut = next((k for k, i in enumerate(idxs) if i not in needs), len(idxs))
        if cut == len(idxs):
            return out
        rest = idxs[cut:]
        out[at] = (idxs[:cut], False)
        if at + 1 < len(out) and not out[at + 1][1]:
            out[at + 1] = (rest + out[at + 1][0], False)
        else:
            out.insert(at + 1, (rest, False))
        return out

    def _knowledge(self, turn_of: dict[int, int]) -> Knowledge:
        """What the user knows of the executed chain, each step asked for in ``turn_of``'s
        request."""
        return Knowledge(
            self.done, turn_of, self.grounder.index.exists, lambda d, kind: creates(d.tool, kind)
        )

    def _says(self, knowledge: Knowledge, i: int, j: int) -> bool:
        """Whether step i takes from step j only ids the user says as they are: ids of
        the initial state that no reference stands for ("will pl_0078 be open?" after
        "what's on one of my lists?", whose result holds pl_0078). Such a call does not
        wait for j from where the user stands (a model may make it before asking what j
        lacks), so a clarify request does not ask for it."""
        step = self.done[i]
        if j in step.repairs or j not in step.links.values():
            return False  # a repair or an effect on state: i needs j's call
        for param, src in step.links.items():
            if src != j:
                continue
            entity = step.tool.entity_params.get(param)
            if entity is None or knowledge.reference(i, param) is not None:
                return False
            values = step.args[param] if isinstance(step.args[param], list) else [step.args[param]]
            if not all(self.grounder.index.exists(entity.name, str(v)) for v in values):
                return False
        return True

    def _recoveries(self) -> dict[int, int]:
        """The failed attempts the gold shows: recovered step -> the step it goes before.

        A step with a qualifying failure (:meth:`_recoverable`) is shown recovering with
        probability ``recovery_rate``, drawn from the candidate and the step (not from
        the block's stream, which stays as it was), unless it is a clarify task's, its
        repairs are in another turn, or showing it would take the gold's error rate over
        ``max_error_rate`` (earlier steps' attempts first). The attempt goes before the
        first repair (a repair runs because the attempt failed), else right before the
        retry.
        """
        out: dict[int, int] = {}
        if self.level == "missing" or not self.cfg.recovery_rate:
            return out
        done = self.done
        # the gold's calls and failed calls so far: a shown attempt adds one of each
        calls = sum(d.executed for d in done)
        failed = sum(d.given_up for d in done)
        for i, d in enumerate(done):
            if not d.executed or d.failed is None:
                continue
            if any(done[j].segment != d.segment for j in d.repairs):
                continue
            if not self._derivable(d) or self._contradicted(d):
                continue
            draw = stable_int("recover", self.cid, i) % 1_000_000 / 1_000_000
            if draw < self.cfg.recovery_rate and self._within_error_rate(failed + 1, calls + 1):
                out[i] = min(d.repairs, default=i)
                calls, failed = calls + 1, failed + 1
        return out

    def _assemble(self, offered: list[str], *, recover: bool) -> Candidate | str:
        sc, rng = self.sc, self.rng
        done = self.done
        self.shown = False
        # (build dropped a clarify candidate with no value to leave out)
        omit = self._missing_param() if self.level == "missing" else None
        self.withheld = (
            said_values(choice_words(done[omit[0]].tool, omit[1], done[omit[0]].args[omit[1]]))
            if omit is not None
            else []
        )
        level = self.level
        shown = self._recoveries() if recover else {}
        self.shown = bool(shown)
        attempts_before: dict[int, list[int]] = {}
        for i, at in sorted(shown.items()):
            attempts_before.setdefault(at, []).append(i)
        # the repairs of a shown attempt are what its error asked for: the user never says them
        unsaid = {j for i in shown for j in done[i].repairs}
        order: list[tuple[str, int]] = []  # ("attempt", recovered step) or ("call", step)
        for i, d in enumerate(done):
            if d.executed:
                order.extend(("attempt", r) for r in attempts_before.get(i, []))
                order.append(("call", i))
        gold_ids = {key: f"s{n}" for n, key in enumerate(order, 1)}
        self._gold_ids = gold_ids
        results: list[ToolResult] = []
        for what, i in order:
            failed = done[i].failed
            results.append(failed[1] if what == "attempt" and failed else done[i].result)

        def gold(idxs: list[int]) -> list[GoldStep]:
            out: list[GoldStep] = []
            for i in idxs:
                if not done[i].executed:
                    continue
                for r in attempts_before.get(i, []):
                    tried, failure = done[r].failed or ({}, None)
                    out.append(
                        GoldStep(
                            id=gold_ids["attempt", r],
                            name=done[r].name,
                            arguments=tried,
                            expect_error=str(failure.error_kind) if failure else None,
                        )
                    )
                if done[i].given_up:  # failed as asked: explained, never retried
                    out.append(
                        GoldStep(
                            id=gold_ids["call", i],
                            name=done[i].name,
                            arguments=done[i].args,
                            expect_error=str(done[i].result.error_kind),
                        )
                    )
                    continue
                deps = sorted(self._dependencies()[i])
                out.append(
                    GoldStep(
                        id=gold_ids["call", i],
                        name=done[i].name,
                        arguments=done[i].args,
                        depends_on=[gold_ids["call", j] for j in deps],
                    )
                )
            return out

        turns: list[Turn] = []
        rendered: list[RenderedTurn | None] = []
        clarify_at: int | None = None
        turn_level = "minimal" if level == "minimal" else "complete"
        requests = self._turn_steps(omit)
        self.renderer.knowledge = self._knowledge(
            {i: r for r, (idxs, _) in enumerate(requests) for i in idxs}
        )
        self.renderer.unknowable = []
        self.renderer.self_named = []
        self.renderer.persona_reads = []
        self.renderer.framing = {}
        self.renderer.said_before = []
        self.renderer.reframed = []
        self.renderer.self_answered = []
        self.renderer.unphrased = []
        for idxs, hidden in requests:
            first = not turns
            if hidden:
                rt = self.renderer.request(
                    idxs, done, self.phrasings, first=first, level="complete"
                )
                turns.append(Turn(user=rt.text, kind="abstain", info_level="complete"))
                rendered.append(rt)
            elif omit is not None and omit[0] in idxs:
                rt = self.renderer.request(idxs, done, self.phrasings, first=first, omit=omit)
                clarify_at = len(turns)
                turns.append(
                    Turn(user=rt.text, kind="clarify", info_level="missing", missing=[omit[1]])
                )
                rendered.append(rt)
                supply = self.renderer.supply(
                    omit[1], done[omit[0]].args[omit[1]], done[omit[0]].tool
                )
                turns.append(Turn(user=supply.text, steps=gold(idxs), info_level="complete"))
                rendered.append(None)
            else:
                said = [i for i in idxs if i not in unsaid]
                rt = self.renderer.request(said, done, self.phrasings, first=first)
                turns.append(Turn(user=rt.text, steps=gold(idxs), info_level=turn_level))
                rendered.append(rt)
        tools = self._with_distractors(offered) if self.distract else list(offered)
        if self.irrelevant:
            busy = {q.split(".")[0] for q in tools}
            foreign = [f for f in sc.foreign_phrasings if f[0].server_name not in busy]
            rt = self.renderer.irrelevant(sc.server.out_of_scope, foreign_requests(foreign, rng))
            slots = [k for k in range(len(turns) + 1) if clarify_at is None or k != clarify_at + 1]
            at = rng.choice(slots)
            turns.insert(at, Turn(user=rt.text, kind="abstain", info_level="complete"))
            rendered.insert(at, None)
            if at == 0 and len(turns) > 1:  # a greeting opens the conversation, not its 2nd turn
                _move_opener(turns)
        if self.renderer.unknowable:  # an id said before the user could know it
            return f"unknowable_value:{self.renderer.unknowable[0]}"
        if self.renderer.self_named:  # the user would name themself by id
            return f"self_by_id:{self.renderer.self_named[0]}"
        if self.renderer.reframed:  # "Buy lst_0041 now for usr_017. ... I'm usr_017"
            return f"reframed:{self.renderer.reframed[0]}"
        # "List the standing orders of cus_035. | Log me in: customer cus_035"
        logged = logged_in_as(done, sc.server.persona)
        if set(self.renderer.persona_reads) & (introduced([t.user for t in turns]) | logged):
            return "self_by_id:read"  # "How is seller usr_020 rated? ... I'm usr_020"
        if self.renderer.self_answered:  # a read its own list's filter answers
            return f"self_answered:{self.renderer.self_answered[0]}"
        if self.renderer.unphrased:  # no phrasing states the call: not "Set climate."
            return f"unphrased:{self.renderer.unphrased[0]}"
        if not any(not s.attempt for t in turns for s in t.steps):
            return "no_gold_steps"  # none, or only a call given up: nothing to score
        recoveries = ["repair" if done[i].repairs else "retry" for i in sorted(shown)]
        recoveries += ["give_up" for d in done if d.given_up]
        return self._package(turns, rendered, tools, offered, level, results, recoveries=recoveries)

    def _package(
        self,
        turns: list[Turn],
        rendered: list[RenderedTurn | None],
        tools: list[str],
        offered: list[str],
        level: str,
        results: list[ToolResult],
        *,
        abstention: str | None = None,
        recoveries: list[str] | None = None,
    ) -> Candidate | str:
        """The task of these turns, checked (credentials, text, replay) and featurised."""
        cfg, sc, done = self.cfg, self.sc, self.done
        if not cfg.turns[0] <= len(turns) <= cfg.turns[1]:
            return "turn_count"
        overrides = self._strip_enums(tools) if self.strip else {}
        n_distractors = len(tools) - len(offered)
        chain = [d.name for d in done]
        task = Task(
            id=self.cid,
            servers=[sc.server.name],
            seed=self.seed,
            size=self.size,
            tools=tools,
            schema_overrides=overrides,
            turns=turns,
            meta={
                "generator": GENERATOR,
                "split": "train",  # the collector decides (pipeline.assign_splits)
                "chain": chain,
                "info_level": level,
                "knobs": {
                    "distractors": n_distractors,
                    "strip_enums": bool(overrides),
                    "irrelevant": self.irrelevant and abstention is None,
                    "missing_tool": None if abstention else self.hidden,
                    "abstention": abstention,
                },
                "calls": self.calls,
                "failed_calls": self.failures,
                "paraphrased": 0,  # the LLM writer's accepted rewrites, counted below
                "outcomes": [r.outcome for r in results],
                "recoveries": recoveries or [],
            },
        )
        # the paper's filter: the share of the gold's calls that fail (an empty result is
        # no failure); the draws made while searching for arguments are not the gold's
        if not self._within_error_rate(sum(not r.ok for r in results), len(results)):
            return "error_rate"
        # the canonical form: what a reader of the JSON gets (schema key order included)
        task = Task.from_json(task.to_json())
        secrets = untraced_secrets(task, results, sc.registry)
        if secrets:
            return f"untraced_secret:{secrets[0]}"
        problems = text_problems(task, results)
        if problems:
            return f"text_gold_mismatch:{problems[0]}"
        empty = None if abstention else self._empty_read_of_new()  # (nothing is called)
        if empty is not None:
            return f"empty_read_of_new:{empty}"
        if not abstention and self._read_after_reply():
            return "read_after_reply"
        if not abstention and self._read_twice():
            return "read_twice"
        if not abstention and self._back_at_once():
            return "back_at_once"
        read = sc.lint.read(task.model_dump(mode="json"))
        if inverse_write(read) or repeated_write(read):  # a chain that undoes or redoes itself
            return "undoes_itself"
        if moot_write(read):  # a write that a later call ends, or an ending made undone
            return "moot_write"
        asked = self._with_hidden_request(task)
        if asked is not None and (inverse_write(asked) or moot_write(asked)):
            return "hidden_undoes"  # "delete the reply" asked of a hidden tool just after it
        for flaw in (
            second_persona,
            noop_update,
            contradicting_filters,
            misfit_identifier,
            foreign_value,
            clarify_with_independent,  # what the split by needs (_turn_steps) still lets by
            clarify_value_said,
        ):
            if flaw(read):  # what the grounding avoids, should a draw still come out so
                return flaw.__name__
        if repeated_login(read):  # one user logs in once
            return "second_login"
        if idle_login(read):  # a login for a call the turn after it does not make (hidden)
            return "idle_login"
        reason, final_hash = replay(
            task, results, self.recorded, session=self.session, registry=sc.registry, hasher=_HASHER
        )
        if reason is not None:
            return reason
        rewrites: Counter[str] = Counter()
        if sc.writer is not None:  # last: a candidate dropped above costs no request
            task, rewrites = sc.writer.write(
                task, rendered, lambda t: self._text_findings(t, results), self.withheld
            )
            task.meta["paraphrased"] = rewrites["accepted"]
        task.final_state_hash = final_hash
        if abstention:
            # nothing is called: what is asked is what tells two of them apart
            asked = ["abstain", *(f"ask:{t.user}" for t in task.turns)]
            feats = call_features(
                ((d.name, d.args) for d in done), asked, values=cfg.dedup == "values"
            )
        else:
            feats = self.features
        return Candidate(task, feats, rewrites)

    def _empty_read_of_new(self) -> str | None:
        """The first read of the gold that looks into something the conversation made and
        finds nothing in it (the places of a list just created, the files of a folder just
        made), or into something it deleted (the dates of an event just deleted): a
        question whose answer the user knows. Its tool's name, or None."""
        index = self.grounder.index
        ended: set[tuple[str, str]] = set()  # what a delete_<kind> (DESTROY_VERBS) took
        for d in self.done:
            if not d.executed or d.result is None or not d.result.ok:
                continue
            ids = [
                (entity.name, str(d.args[name]))
                for name, entity in d.tool.entity_params.items()
                if isinstance(d.args.get(name), str | int) and not isinstance(d.args[name], bool)
            ]
            if d.tool.writes:
                verb, *noun = d.tool.name.split("_")
                if verb in DESTROY_VERBS:
                    ended.update((k, v) for k, v in ids if k.split("_")[-1] in noun)
                continue
            if any(i in ended for i in ids):
                return d.tool.name  # "When does evt_0128 happen?" after deleting it
            if not _lists_nothing(d.content):
                continue
            for kind, value in ids:
                if (
                    index.key(kind) is not None  # a kind the state lists
                    and not index.exists(kind, value)  # not in the initial state: made here
                ):
                    return d.tool.name
        return None

    def _back_at_once(self) -> bool:
        """Whether the gold goes into a directory and straight back out in one request
        ("pushd ~/Pictures/2023/Camping. Next, popd."): a pushd is for working there
        first (a later turn may go back)."""
        made = [d for d in self.done if d.executed and not d.given_up]
        return any(
            a.tool.name == "pushd" and b.tool.name == "popd" and a.segment == b.segment
            for a, b in itertools.pairwise(made)
        )

    def _read_twice(self) -> bool:
        """Whether the gold makes the same read twice with no write between (list the scenes
        of hom_02, look at one, then list the scenes of hom_02 again): nothing it could
        show has changed."""
        seen: set[str] = set()
        for d in self.done:
            if not d.executed or d.given_up:
                continue
            if d.tool.writes:
                seen.clear()
                continue
            key = f"{d.tool.name}:{json.dumps(d.args, sort_keys=True, default=str)}"
            if key in seen:
                return True
            seen.add(key)
        return False

    def _read_after_reply(self) -> bool:
        """Whether the gold reads something after it replied to it, forwarded it or
        commented on it ("Reply to msg_00222: ... After that, what does msg_00222 say?",
        "Comment 'Recipe please!' on post_00192 ... What did people comment on
        post_00192?"): a person reads first."""
        answered: set[tuple[str, str]] = set()
        for d in self.done:
            if not d.executed:
                continue
            ids = {
                (entity.name, str(d.args[name]))
                for name, entity in d.tool.entity_params.items()
                if isinstance(d.args.get(name), str | int)
            }
            if not d.tool.writes and ids & answered:
                return True
            if d.tool.writes and d.tool.name.split("_")[0] in ("reply", "forward", "comment"):
                answered |= ids
        return False

    def _text_findings(self, task: Task, results: list[ToolResult]) -> set[str]:
        """What the text of ``task`` fails: the text and gold check, the credentials check
        and every lint class (what a rewrite of a turn may not add)."""
        sc = self.sc
        found = {f"text_check:{p.split(':', 1)[0]}" for p in text_problems(task, results)}
        if untraced_secrets(task, results, sc.registry):
            found.add("text_check:untraced_secret")
        read = sc.lint.read(task.model_dump(mode="json"))
        found.update(f"lint:{name}" for name, flaw in FLAW_CLASSES.items() if flaw.check(read))
        return found

    def _special_turns(self) -> list[str]:
        """The special turns known once the chain is drawn: ``clarify`` for a missing value,
        ``abstain`` for a hidden tool or an irrelevant request (``give_up`` only shows once
        the chain has run)."""
        specials = []
        if self.level == "missing":
            specials.append("clarify")
        if self.hidden is not None or self.irrelevant:
            specials.append("abstain")
        return specials

    def _features(self) -> frozenset[str]:
        """The near-duplicate features of a tool-calling candidate, known once it has run.

        Its calls (given-up ones included, a shown attempt being its step's), and its
        special turns: ``clarify`` for a missing value, ``abstain`` for a hidden tool or
        an irrelevant request, ``give_up`` for a call given up.
        """
        specials = self._special_turns()
        if any(d.given_up for d in self.done):
            specials.append("give_up")
        return call_features(
            ((d.name, d.args) for d in self.done), specials, values=self.cfg.dedup == "values"
        )

    # ------------------------------------------------------------ abstention
    def _abstention(self) -> Candidate | str:
        """A whole task whose right answer is no call: every turn is ``abstain``.

        Half of them ask for something of this server whose tool is not offered (a
        request grounded in the state, like any other, with that tool hidden); the
        rest, and the other turns, ask for what no offered tool does (general
        questions, other servers' requests).
        """
        cfg, rng, sc = self.cfg, self.rng, self.sc
        self.irrelevant = False
        self.session = sc.session(self.seed, self.size)
        self.renderer = Renderer(rng, "complete")
        self.clarify_plan = None
        self.withheld = []
        self.n_seg = 1
        self.hidden = None
        n_turns = rng.randint(*cfg.turns)
        offered = [t.qualified_name for t in sc.server.visible_tools()]
        turns: list[Turn] = []
        rendered: list[RenderedTurn | None] = []
        if rng.random() < 0.5 and sc.hideable:
            target = self._target(sc.hideable)
            self.hidden = target
            outcome = self._execute([sc.sampler.new_step(rng, target)])
            if outcome is not None:
                return outcome
            rt = self.renderer.request([0], self.done, self.phrasings, first=True, level="complete")
            turns.append(Turn(user=rt.text, kind="abstain", info_level="complete"))
            rendered.append(rt)
            offered = [q for q in offered if q != f"{sc.server.name}.{target}"]
        else:
            self.done, self.calls, self.failures = [], 0, 0
        tools = self._with_distractors(offered) if self.distract else list(offered)
        busy = {q.split(".")[0] for q in tools}
        foreign = [f for f in sc.foreign_phrasings if f[0].server_name not in busy]
        asked = {t.user for t in turns}
        for _ in range(4 * n_turns):
            if len(turns) >= n_turns:
                break
            rt = self.renderer.irrelevant(sc.server.out_of_scope, foreign_requests(foreign, rng))
            if rt.text in asked:
                continue
            asked.add(rt.text)
            at = rng.randint(0, len(turns))
            turns.insert(at, Turn(user=rt.text, kind="abstain", info_level="complete"))
            rendered.insert(at, None)
            if at == 0 and len(turns) > 1:  # the greeting stays on the conversation's first turn
                _move_opener(turns)
        kind = "missing_tool" if self.hidden is not None else "irrelevant"
        self._record_final_state()
        return self._package(turns, rendered, tools, offered, "complete", [], abstention=kind)

    # ------------------------------------------------------------------ knobs
    def _with_distractors(self, offered: list[str]) -> list[str]:
        rng = self.rng
        pool = self.sc.foreign
        lo, hi = self.cfg.distractors
        if len(pool) < lo:
            return list(offered)
        k = rng.randint(lo, min(hi, len(pool)))
        chosen: list[str] = []
        names = set()
        for spec in rng.sample(pool, len(pool)):
            if spec.name in names:
                continue
            names.add(spec.name)
            chosen.append(spec.qualified_name)
            if len(chosen) == k:
                break
        tools = list(offered) + chosen
        rng.shuffle(tools)
        return tools

    def _strip_enums(self, tools: list[str]) -> dict[str, dict[str, Any]]:
        """Schema overrides of the offered tools with their enums stripped, from the schema
        and the descriptions alike (:func:`~prove_gym.synth.enums.stripped_schema`)."""
        out = {}
        for qname in tools:
            stripped = self.sc.stripped_schema(qname)
            if stripped is not None:
                out[qname] = stripped
        return out


def _move_opener(turns: list[Turn]) -> None:
    """Move the greeting ("Hi! ") of ``turns[1]`` to ``turns[0]``, which now opens."""
    text = turns[1].user
    for opener in OPENERS:
        if opener and text.startswith(opener):
            turns[1] = turns[1].model_copy(update={"user": text[len(opener) :]})
            turns[0] = turns[0].model_copy(update={"user": opener + turns[0].user})
            return
