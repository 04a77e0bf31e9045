"""Dependency-aware coverage R_cov, and the alignment of calls to gold steps it defines.

``R_cov = (1/|G|) Σ_g m(g)·o(g)``:

- ``m(g) = 1`` when step g is *matched*: a model call with the same tool name
  whose arguments include all of g's argument keys (values are not checked
  here; that is R_arg's job). Arguments that are not an object (a list, a
  string) match nothing; missing arguments (``None``) are an empty object;
- ``o(g) = ∏_{(j,g) ∈ E} 1[µ(j) < µ(g)]``: every prerequisite j of g was matched
  by a call at an earlier position (µ is the matched call's index in the whole
  conversation; positions are global across turns). A prerequisite only has
  to be matched, not counted itself.

Each call matches at most one step and each step at most one call. Calls made
in a clarify/abstain turn match nothing (see :mod:`prove_gym.reward.abstention`).

The paper leaves open *which* matching µ to use when a call fits several steps
(same tool twice) or a step fits several calls (a repeated call). We take the
best one for the model, lexicographically: most counted steps, then most
matched steps, then the highest sum of argument-value scores (R_arg's pair
score). Being an optimum, coverage cannot rise when a call is removed, and does
not depend on the order in which independent gold steps are listed. It is found
exactly by dynamic programming over the calls in order (state: the set of
matched steps; a call that is the only candidate of its only step is assigned
without branching). Above ``MAX_STATES`` live states (not reached by realistic
trajectories) the search keeps the best ``MAX_STATES`` states, a beam.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

from prove_gym.registry import Registry
from prove_gym.reward.common import Calls, PreparedTask, StepInfo, as_records, prepare
from prove_gym.reward.values import pair_score
from prove_gym.task import Task
from prove_gym.workspace import CallRecord

MAX_STATES = 4096


@dataclass(frozen=True, slots=True)
class Alignment:
    """The matching µ between gold steps and calls.

    Attributes:
        matched: Call index per matched step index (``m(g) = 1``).
        counted: Step indices that count for coverage (``m(g)·o(g) = 1``).
        pair_scores: R_arg's score of each matched pair, by step index.
    """

    matched: dict[int, int]
    counted: frozenset[int]
    pair_scores: dict[int, float]


_Link = tuple[int, int, int, "_Link | None"] | None  # (step, call, counted, parent)
_Value = tuple[int, int, float]  # (counted, matched, sum of pair scores)


def align_prepared(prepared: PreparedTask, calls: Sequence[CallRecord]) -> Alignment:
    """The best alignment (see the module docstring) of ``calls`` to the prepared task."""
    steps = prepared.steps
    by_name = prepared.by_name
    skip_turns = prepared.no_call_turns
    candidates: list[tuple[int, tuple[int, ...]]] = []
    uses = [0] * len(steps)
    for i, call in enumerate(calls):
        indices = by_name.get(call.name)
        if indices is None or call.turn in skip_turns:
            continue
        args = call.arguments
        if type(args) is dict or isinstance(args, Mapping):
            keys: Set[str] = args.keys()
        elif args is None:  # no arguments given: an empty object, as sessions read it
            keys = frozenset()
        else:  # not an object at all: matches nothing
            continue
        fits = tuple(j for j in indices if steps[j].keys <= keys)
        if fits:
            candidates.append((i, fits))
            for j in fits:
                uses[j] += 1

    if all(len(fits) == 1 and uses[fits[0]] == 1 for _, fits in candidates):
        return _align_forced(steps, calls, candidates)

    scores: dict[tuple[int, int], float] = {}

    def score_of(i: int, j: int) -> float:
        key = (i, j)
        value = scores.get(key)
        if value is None:
            step = steps[j]
            value = scores[key] = pair_score(calls[i].arguments, step.arguments, step.normalise)
        return value

    states: dict[int, tuple[_Value, _Link]] = {0: ((0, 0, 0.0), None)}
    for i, fits in candidates:
        # the only call of its only step: taking it dominates skipping it (no state holds it yet)
        forced = len(fits) == 1 and uses[fits[0]] == 1
        new: dict[int, tuple[_Value, _Link]] = {} if forced else dict(states)
        for mask, (value, link) in states.items():
            for j in fits:
                bit = 1 << j
                if mask & bit:
                    continue
                gain = 1 if not steps[j].prereqs & ~mask else 0
                nv = (value[0] + gain, value[1] + 1, value[2] + score_of(i, j))
                nm = mask | bit
                current = new.get(nm)
                if current is None or nv > current[0]:
                    new[nm] = (nv, (j, i, gain, link))
        if len(new) > MAX_STATES:
            ranked = sorted(new.items(), key=lambda kv: (kv[1][0], -kv[0]), reverse=True)
            new = dict(ranked[:MAX_STATES])
        states = new

    best_value, best_link = None, None
    for value, link in states.values():
        if best_value is None or value > best_value:
            best_value, best_link = value, link
    matched: dict[int, int] = {}
    counted: set[int] = set()
    pair_scores: dict[int, float] = {}
    link = best_link
    while link is not None:
        j, i, gain, link = link
        matched[j] = i
        pair_scores[j] = score_of(i, j)
        if gain:
            counted.add(j)
    return Alignment(
        matched=dict(sorted(matched.items())),
        counted=frozenset(counted),
        pair_scores=pair_scores,
    )


def _align_forced(
    steps: Sequence[StepInfo],
    calls: Sequence[CallRecord],
    candidates: list[tuple[int, tuple[int, ...]]],
) -> Alignment:
    """Every candidate call fits one step that no other call fits: the matching is forced."""
    mask = 0
    matched: dict[int, int] = {}
    counted: set[int] = set()
    pair_scores: dict[int, float] = {}
    for i, (j,) in candidates:
        step = steps[j]
        if not step.prereqs & ~mask:
            counted.add(j)
        mask |= 1 << j
        matched[j] = i
        pair_scores[j] = pair_score(calls[i].arguments, step.arguments, step.normalise)
    return Alignment(
        matched=dict(sorted(matched.items())),
        counted=frozenset(counted),
        pair_scores=pair_scores,
    )


def align(task: Task, calls: Calls, *, registry: Registry | None = None) -> Alignment:
    """Align a trajectory's calls to the task's gold steps.

    >>> from prove_gym import Task
    >>> task = Task.from_json({"id": "demo", "servers": ["calendar"], "turns": [{"user": "...",
    ...     "steps": [{"id": "s1", "name": "search_events", "arguments": {"query": "review"}},
    ...               {"id": "s2", "name": "get_event", "arguments": {"event_id": "evt_0012"},
    ...                "depends_on": ["s1"]}]}]})
    >>> a = align(task, [{"name": "get_event", "arguments": {"event_id": "evt_0012"}},
    ...                  {"name": "search_events", "arguments": {"query": "review"}}])
    >>> a.matched, sorted(a.counted)
    ({0: 1, 1: 0}, [0])
    """
    return align_prepared(prepare(task, registry), as_records(calls))


def coverage_from(prepared: PreparedTask, alignment: Alignment) -> float | None:
    """``|counted| / |G|``; ``None`` for a task without gold steps."""
    if not prepared.steps:
        return None
    return len(alignment.counted) / len(prepared.steps)


def coverage(task: Task, calls: Calls, *, registry: Registry | None = None) -> float | None:
    """R_cov in [0, 1] (``None`` for a task without gold steps: the abstention rule applies).

    >>> from prove_gym import Task
    >>> task = Task.from_json({"id": "demo", "servers": ["calendar"], "turns": [{"user": "...",
    ...     "steps": [{"id": "s1", "name": "search_events", "arguments": {"query": "review"}},
    ...               {"id": "s2", "name": "get_event", "arguments": {"event_id": "evt_0012"},
    ...                "depends_on": ["s1"]}]}]})
    >>> search = {"name": "search_events", "arguments": {"query": "design review"}}
    >>> get = {"name": "get_event", "arguments": {"event_id": "evt_0099"}}
    >>> coverage(task, [search, get]), coverage(task, [get, search]), coverage(task, [get])
    (1.0, 0.5, 0.0)
    """
    prepared = prepare(task, registry)
    return coverage_from(prepared, align_prepared(prepared, as_records(calls)))
