"""Topology-aware sampling of tool chains (length 2-5) over a server's dependency graph.

Like EnvFactory's sampler (arXiv 2605.18703), a chain grows around a target
tool: each unsatisfied identifier input of a step may get a *producer* placed
before it (prerequisites first), optional inputs are skipped with p = 0.6, an
implicit predecessor (a write that sets up state) may be placed first, and a
*successor* that consumes the last step's result may be appended. Tools with no
edge at all are paired with an unrelated tool ("What time is it? Also ...").

Targets and the tools of every move are weighted by inverse frequency (the
caller keeps the counts), so every tool of a server shows up in the dataset.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from prove_gym.server.base import Server
    from prove_gym.server.tool import ToolSpec
    from prove_gym.synth.graph import ToolGraph

T = TypeVar("T")

OPTIONAL_INPUT_P = 0.4
"""Chance that an optional identifier input is wanted (EnvFactory skips with p = 0.6)."""

_SECRET_PARAM = re.compile(r"(^|_)(password|passwd|passcode|pin|token|secret)s?($|_)")


COPY_VERBS = frozenset({"clone", "copy", "cp", "duplicate", "fork", "forward", "reply"})
"""First words of the names of tools that make a new entity of the kind they take."""


def weighted_choice(rng: random.Random, items: Sequence[T], weights: Sequence[float]) -> T:
    """One item drawn with probability proportional to its weight (one ``rng.random()``)."""
    pick = rng.random() * sum(weights)
    for item, w in zip(items, weights, strict=True):
        pick -= w
        if pick <= 0:
            return item
    return items[-1]


def is_secret_param(name: str) -> bool:
    """Parameter names that hold credentials (``password``, ``pin``, ``auth_token``, ...).

    >>> [is_secret_param(n) for n in ("passcode", "auth_token", "pinned", "spin")]
    [True, True, False, False]
    """
    return bool(_SECRET_PARAM.search(name.lower()))


def is_secret_kind(kind: str) -> bool:
    """Entity kinds that are credentials: their names contain ``token`` or ``auth``."""
    kind = kind.lower()
    return "token" in kind or "auth" in kind


@dataclass(eq=False)
class PlannedStep:
    """One step of a sampled chain.

    Attributes:
        tool: The tool.
        inputs: Optional identifier parameters the step should be given (from a
            producer placed before it, or from live state).
        segment: The user turn (request) the step belongs to; set later.
    """

    tool: ToolSpec
    inputs: set[str] = field(default_factory=set)
    segment: int = 0

    @property
    def name(self) -> str:
        return self.tool.name


class ChainSampler:
    """Samples chains for one server.

    Args:
        server: The server.
        graph: Its dependency graph (declared or LLM-refined).
    """

    W_PREREQUISITE = 3.0
    W_IMPLICIT = 1.0
    W_SUCCESSOR = 2.0
    W_SUCCESSOR_IMPLICIT = 0.7
    W_UNRELATED = 0.15

    def __init__(self, server: Server, graph: ToolGraph) -> None:
        self.server = server
        self.graph = graph
        self.specs: dict[str, ToolSpec] = {t: server.tools[t] for t in graph.tools}
        self.producers: dict[str, list[str]] = {}
        for spec in self.specs.values():
            if spec.destructive:
                continue  # what it returns may be gone
            for kind in spec.returns:
                self.producers.setdefault(kind, []).append(spec.name)

    def new_step(
        self, rng: random.Random, name: str, inputs: set[str] | None = None
    ) -> PlannedStep:
        tool = self.specs[name]
        wanted = set(inputs or ())
        for param, entity in tool.entity_params.items():
            if param in tool.required or param in wanted:
                continue
            if is_secret_kind(entity.name) or rng.random() < OPTIONAL_INPUT_P:
                wanted.add(param)
        return PlannedStep(tool, wanted)

    def sample(
        self,
        rng: random.Random,
        target: str,
        length: int,
        weight: Callable[[str], float] | Mapping[str, float],
    ) -> list[PlannedStep]:
        """A chain of up to ``length`` steps around ``target``, prerequisites first."""
        w = weight if callable(weight) else (lambda t: weight.get(t, 1.0))
        steps = [self.new_step(rng, target)]
        for _ in range(4 * length):
            if len(steps) >= length:
                break
            moves = self._moves(steps, w)
            if not moves or rng.random() < 0.08:
                used = {s.name for s in steps}
                moves += [
                    (self.W_UNRELATED * w(t) * (0.3 if t in used else 1.0), ("append", t, ()))
                    for t in self.specs
                ]
            if sum(m[0] for m in moves) <= 0:
                break
            move = weighted_choice(rng, [m for _, m in moves], [mw for mw, _ in moves])
            op, where_or_name, *rest = move
            if op == "insert":
                index, name = where_or_name, rest[0]
                steps.insert(index, self.new_step(rng, name))
            else:
                name, params = where_or_name, rest[0]
                steps.append(self.new_step(rng, name, set(params)))
        return steps

    def _moves(
        self, steps: list[PlannedStep], w: Callable[[str], float]
    ) -> list[tuple[float, tuple]]:
        moves: list[tuple[float, tuple]] = []
        used = {s.name for s in steps}

        def repeat(t: str) -> float:
            return 0.3 if t in used else 1.0

        for i, step in enumerate(steps):
            for param, entity in step.tool.entity_params.items():
                if param not in step.tool.required and param not in step.inputs:
                    continue
                kind = entity.name
                if any(kind in steps[j].tool.returns for j in range(i)):
                    continue
                boost = 10.0 if is_secret_kind(kind) else 1.0
                for prod in self.producers.get(kind, []):
                    if prod != step.name:
                        moves.append(
                            (
                                self.W_PREREQUISITE * boost * w(prod) * repeat(prod),
                                ("insert", i, prod),
                            )
                        )
        first = steps[0]
        for e in self.graph.in_edges(first.name):
            if e.kind == "implicit" and e.src in self.graph.writes and e.src not in used:
                moves.append((self.W_IMPLICIT * w(e.src), ("insert", 0, e.src)))
        last = steps[-1]
        for e in self.graph.out_edges(last.name):
            dst = self.specs.get(e.dst)
            if dst is None:
                continue
            if e.kind == "explicit":
                if last.tool.destructive and dst.writes:
                    continue  # what it destroyed cannot be changed further
                weight = self.W_SUCCESSOR
            else:
                weight = self.W_SUCCESSOR_IMPLICIT
            moves.append((weight * w(e.dst) * repeat(e.dst), ("append", e.dst, e.params)))
        return moves
