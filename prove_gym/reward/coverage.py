"""Dependency-aware coverage R_cov, and the alignment of calls to gold steps it defines.

``R_cov = (1/|G|) Σ_g m(g)·o(g)``:

- ``m(g) = 1`` when step g is *matched*: a model call with the same tool name
  whose arguments include all of g's argument keys (values are not checked
  here; that is R_arg's job). Arguments that are not an object (a list, a
  string) match nothing; missing arguments (``None``) are an empty object.
  Two :class:`MatchRules` refine this, both on by default and both off in the
  paper's preset: a gold key whose value is the tool's declared default need
  not be sent (the call means the same without it), and an argument naming an
  entity (a declared id parameter such as ``account_id``) must carry the gold
  value: a call on the wrong account is not the gold step done;
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
not depend on the order in which independent gold steps are listed.

How the optimum is found, in polynomial time for every realistic task:

1. Steps split into independent components (steps that share a candidate call
   or a dependency edge); each is solved on its own.
2. In a component, the *sources* (steps another step depends on) are few: their
   assignments to candidate calls are enumerated (an unmatched source is only
   tried when another step competes for its calls). Once the sources' positions
   are fixed, whether a *sink* (a step nothing depends on) counts at a call is
   known, so the sinks of each tool are an assignment problem, solved exactly
   by the Hungarian algorithm (O(n³)). k calls of one tool against k gold steps
   of it cost one assignment problem, not 2^k states.
3. A component whose source assignments exceed ``MAX_ASSIGNMENTS`` (a long chain
   of steps of one tool, each depending on the last, matched by calls that fit
   every step of it) falls back to dynamic programming over the calls in order
   (state: the set of matched steps), exact while the states fit a beam of
   ``MAX_STATES``, shrunk so that one component costs at most ``DP_WORK``
   transitions. Beyond that (more than about 12 interchangeable chained steps)
   the result is the best the beam kept: a lower bound of the optimum, found in
   bounded time. ``benchmarks/bench_reward.py`` prints the growth curve.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass

from prove_gym.registry import Registry
from prove_gym.reward.common import (
    Calls,
    PreparedTask,
    StepInfo,
    prepare,
    scored_calls,
)
from prove_gym.reward.values import pair_score, values_equal
from prove_gym.task import Task
from prove_gym.workspace import CallRecord

MAX_STATES = 4096
MAX_ASSIGNMENTS = 512
DP_WORK = 50_000


@dataclass(frozen=True, slots=True)
class MatchRules:
    """When a call matches a gold step beyond "same name, all gold keys present".

    Attributes:
        defaults_optional: A gold key whose value equals the tool's declared default
            need not be present (the omitted value is taken as that default).
        match_ids: Gold values of entity-id parameters must be equal.
    """

    defaults_optional: bool = True
    match_ids: bool = True


PAPER_RULES = MatchRules(defaults_optional=False, match_ids=False)


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


Value = tuple[int, int, float]  # (counted, matched, sum of pair scores)
_Link = tuple[int, int, int, "_Link | None"] | None  # (step, call, counted, parent)


def _effective(call: CallRecord, step: StepInfo, rules: MatchRules) -> Mapping[str, object]:
    """The call's arguments with omitted default-valued gold keys filled in (when allowed)."""
    args = call.arguments if isinstance(call.arguments, Mapping) else {}
    if not rules.defaults_optional or not step.defaults:
        return args
    missing = {k: v for k, v in step.defaults.items() if k not in args}
    return {**args, **missing} if missing else args


def _fits(step: StepInfo, keys: Set[str], args: Mapping[str, object], rules: MatchRules) -> bool:
    required = step.keys - step.defaults.keys() if rules.defaults_optional else step.keys
    if not required <= keys:
        return False
    if rules.match_ids:
        for key in step.id_keys:
            if key not in args:  # only possible for an omitted default: it is the gold value
                continue
            if not values_equal(args[key], step.arguments[key], step.normalise.get(key)):
                return False
    return True


def align_prepared(
    prepared: PreparedTask, calls: Sequence[CallRecord], rules: MatchRules = PAPER_RULES
) -> Alignment:
    """The best alignment (see the module docstring) of ``calls`` to the prepared task."""
    steps = prepared.steps
    by_name = prepared.by_name
    skip_turns = prepared.no_call_turns
    fits_of: dict[int, tuple[int, ...]] = {}
    for i, call in enumerate(calls):
        indices = by_name.get(call.name)
        if indices is None or call.turn in skip_turns:
            continue
        args = call.arguments
        if type(args) is dict or isinstance(args, Mapping):
            mapping: Mapping[str, object] = args
        elif args is None:  # no arguments given: an empty object, as sessions read it
            mapping = {}
        else:  # not an object at all: matches nothing
            continue
        keys = mapping.keys()
        fits = tuple(j for j in indices if _fits(steps[j], keys, mapping, rules))
        if fits:
            fits_of[i] = fits

    scores: dict[tuple[int, int], float] = {}

    def score_of(i: int, j: int) -> float:
        key = (i, j)
        value = scores.get(key)
        if value is None:
            step = steps[j]
            args = _effective(calls[i], step, rules)
            value = scores[key] = pair_score(args, step.arguments, step.normalise)
        return value

    matched: dict[int, int] = {}
    uses = Counter(j for fits in fits_of.values() for j in fits)
    if all(len(fits) == 1 and uses[fits[0]] == 1 for fits in fits_of.values()):
        matched = {fits[0]: i for i, fits in fits_of.items()}  # forced: nothing to choose
    else:
        for component, comp_calls in _components(steps, fits_of):
            matched.update(_solve(steps, component, comp_calls, fits_of, score_of))
    counted = frozenset(
        j
        for j, i in matched.items()
        if all(k in matched and matched[k] < i for k in _bits(steps[j].prereqs))
    )
    return Alignment(
        matched=dict(sorted(matched.items())),
        counted=counted,
        pair_scores={j: score_of(i, j) for j, i in sorted(matched.items())},
    )


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def _components(
    steps: Sequence[StepInfo], fits_of: Mapping[int, tuple[int, ...]]
) -> list[tuple[list[int], list[int]]]:
    """Steps (and their candidate calls) that interact: a shared call or a dependency edge."""
    parent = list(range(len(steps)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    for step in steps:
        for k in _bits(step.prereqs):
            union(step.index, k)
    for fits in fits_of.values():
        for j in fits[1:]:
            union(fits[0], j)
    groups: dict[int, list[int]] = {}
    for step in steps:
        groups.setdefault(find(step.index), []).append(step.index)
    call_groups: dict[int, list[int]] = {}
    for i in sorted(fits_of):
        call_groups.setdefault(find(fits_of[i][0]), []).append(i)
    return [
        (members, call_groups[root])
        for root, members in sorted(groups.items())
        if root in call_groups
    ]


def _solve(
    steps: Sequence[StepInfo],
    component: list[int],
    comp_calls: list[int],
    fits_of: Mapping[int, tuple[int, ...]],
    score_of: Callable[[int, int], float],
) -> dict[int, int]:
    """The optimal matching (step -> call) of one component."""
    members = set(component)
    source_set = {k for j in component for k in _bits(steps[j].prereqs)} & members
    sources = sorted(source_set)
    cands: dict[int, list[int]] = {j: [] for j in component}
    for i in comp_calls:
        for j in fits_of[i]:
            cands[j].append(i)
    contested = {j for j in sources if any(len(fits_of[i]) > 1 for i in cands[j])}
    options = [([None] if j in contested or not cands[j] else []) + cands[j] for j in sources]
    total = 1
    for opts in options:
        total *= len(opts)
        if total > MAX_ASSIGNMENTS:
            return _solve_dp(steps, comp_calls, fits_of, score_of)
    sink_names: dict[str, list[int]] = {}
    for j in component:
        if j not in source_set and cands[j]:
            sink_names.setdefault(steps[j].name, []).append(j)

    best_value: Value | None = None
    best: dict[int, int] = {}
    chosen: dict[int, int] = {}
    used: set[int] = set()

    def evaluate() -> None:
        nonlocal best_value, best
        counted = sum(
            1
            for j, i in chosen.items()
            if all(k in chosen and chosen[k] < i for k in _bits(steps[j].prereqs))
        )
        value: Value = (counted, len(chosen), sum(score_of(i, j) for j, i in chosen.items()))
        assignment = dict(chosen)
        for sinks in sink_names.values():
            gained, pairs = _assign_sinks(steps, sinks, cands, used, chosen, score_of)
            value = (value[0] + gained[0], value[1] + gained[1], value[2] + gained[2])
            assignment.update(pairs)
        if best_value is None or value > best_value:
            best_value, best = value, assignment

    def walk(position: int) -> None:
        if position == len(sources):
            evaluate()
            return
        j = sources[position]
        for i in options[position]:
            if i is None:
                walk(position + 1)
            elif i not in used:
                used.add(i)
                chosen[j] = i
                walk(position + 1)
                del chosen[j]
                used.discard(i)

    walk(0)
    return best


def _assign_sinks(
    steps: Sequence[StepInfo],
    sinks: list[int],
    cands: Mapping[int, list[int]],
    used: Set[int],
    chosen: Mapping[int, int],
    score_of: Callable[[int, int], float],
) -> tuple[Value, dict[int, int]]:
    """Sinks of one tool against the calls left: a max-weight assignment, lexicographic weight."""
    columns = sorted({i for j in sinks for i in cands[j] if i not in used})
    if not columns:
        return (0, 0, 0.0), {}
    index = {i: c for c, i in enumerate(columns)}
    rows = len(sinks)
    # weight = counted·big + matched·mid + score: a lexicographic order as one number
    mid = float(rows + 1)
    big = mid * (rows + 1)
    forbidden = big * (rows + 2)  # worse than leaving the sink unmatched
    width = len(columns) + rows  # one "unmatched" column per sink
    cost: list[list[float]] = []
    flags: dict[tuple[int, int], int] = {}
    for r, j in enumerate(sinks):
        row = [forbidden] * width
        row[len(columns) + r] = 0.0
        prereqs = _bits(steps[j].prereqs)
        for i in cands[j]:
            if i in used:
                continue
            ok = all(k in chosen and chosen[k] < i for k in prereqs)
            flags[(j, i)] = int(ok)
            row[index[i]] = -((big if ok else 0.0) + mid + score_of(i, j))
        cost.append(row)
    assignment = hungarian(cost)
    counted = matched = 0
    total = 0.0
    pairs: dict[int, int] = {}
    for r, c in enumerate(assignment):
        if c < len(columns) and cost[r][c] < 0:
            j, i = sinks[r], columns[c]
            pairs[j] = i
            matched += 1
            counted += flags[(j, i)]
            total += score_of(i, j)
    return (counted, matched, total), pairs


def hungarian(cost: Sequence[Sequence[float]]) -> list[int]:
    """The column of each row in a minimum-cost assignment (rows <= columns).

    The shortest-augmenting-path Hungarian algorithm, O(rows²·columns), after a
    greedy start on each row's cheapest free column (which settles every row at
    once when, as for repeated identical calls, the costs are all tied).

    >>> hungarian([[4.0, 1.0, 3.0], [2.0, 0.0, 5.0], [3.0, 2.0, 2.0]])
    [1, 0, 2]
    """
    n, m = len(cost), len(cost[0]) if cost else 0
    inf = float("inf")
    u = [0.0] * (n + 1)
    v = [0.0] * (m + 1)
    p = [0] * (m + 1)  # p[col] = row (1-based) assigned to col, 0 if free
    way = [0] * (m + 1)
    for i in range(1, n + 1):  # greedy start: cheapest column, if free
        row = cost[i - 1]
        low = min(row)
        u[i] = low
        for j in range(1, m + 1):
            if row[j - 1] == low and not p[j]:
                p[j] = i
                break
    settled = {p[j] for j in range(1, m + 1) if p[j]}
    for i in range(1, n + 1):
        if i in settled:
            continue
        p[0] = i
        j0 = 0
        minv = [inf] * (m + 1)
        used = [False] * (m + 1)
        while True:
            used[j0] = True
            i0 = p[j0]
            row = cost[i0 - 1]
            ui0 = u[i0]
            delta = inf
            j1 = 0
            for j in range(1, m + 1):
                if not used[j]:
                    cur = row[j - 1] - ui0 - v[j]
                    if cur < minv[j]:
                        minv[j] = cur
                        way[j] = j0
                    if minv[j] < delta:
                        delta = minv[j]
                        j1 = j
            for j in range(m + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while True:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
            if j0 == 0:
                break
    result = [0] * n
    for j in range(1, m + 1):
        if p[j]:
            result[p[j] - 1] = j - 1
    return result


def _solve_dp(
    steps: Sequence[StepInfo],
    comp_calls: list[int],
    fits_of: Mapping[int, tuple[int, ...]],
    score_of: Callable[[int, int], float],
) -> dict[int, int]:
    """DP over the calls in order (state: the matched steps); exact until the beam is full."""
    widest = max((len(fits_of[i]) for i in comp_calls), default=1)
    beam = max(16, min(MAX_STATES, DP_WORK // max(1, len(comp_calls) * widest)))
    states: dict[int, tuple[Value, _Link]] = {0: ((0, 0, 0.0), None)}
    for i in comp_calls:
        new = dict(states)
        for mask, (value, link) in states.items():
            for j in fits_of[i]:
                bit = 1 << j
                if mask & bit:
                    continue
                gain = 1 if not steps[j].prereqs & ~mask else 0
                nv = (value[0] + gain, value[1] + 1, value[2] + score_of(i, j))
                nm = mask | bit
                current = new.get(nm)
                if current is None or nv > current[0]:
                    new[nm] = (nv, (j, i, gain, link))
        if len(new) > beam:
            ranked = sorted(new.items(), key=lambda kv: (kv[1][0], -kv[0]), reverse=True)
            new = dict(ranked[:beam])
        states = new
    best_value: Value | None = None
    best_link: _Link = None
    for value, link in states.values():
        if best_value is None or value > best_value:
            best_value, best_link = value, link
    matched: dict[int, int] = {}
    while best_link is not None:
        j, i, _, best_link = best_link
        matched[j] = i
    return matched


def align(
    task: Task,
    calls: Calls,
    *,
    rules: MatchRules = PAPER_RULES,
    registry: Registry | None = None,
) -> Alignment:
    """Align a trajectory's calls to the task's gold steps (the paper's matching by default).

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
    prepared = prepare(task, registry)
    return align_prepared(prepared, scored_calls(prepared, calls), rules)


def coverage_from(prepared: PreparedTask, alignment: Alignment) -> float | None:
    """``|counted| / |G|``; ``None`` for a task without gold steps."""
    if not prepared.steps:
        return None
    return len(alignment.counted) / len(prepared.steps)


def coverage(
    task: Task,
    calls: Calls,
    *,
    rules: MatchRules = PAPER_RULES,
    registry: Registry | None = None,
) -> float | None:
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
    return coverage_from(prepared, align_prepared(prepared, scored_calls(prepared, calls), rules))
