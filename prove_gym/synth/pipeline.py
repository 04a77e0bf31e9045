"""Fan blocks out over workers, keep them in order, drop near-duplicates, number the tasks.

Each server's blocks are consumed strictly in block order, whatever order the
workers finish them in, and a server stops at its quota. So the dataset depends
only on the seed and the flags: ``--workers 1`` and ``--workers 8`` write the
same bytes, and ``--n 200`` starts with the tasks of ``--n 100`` for each server.

The work function (:func:`~prove_gym.synth.generate.run_block`) is a pure
function of ``(config, server, block)``, so where it runs does not matter: in
this process (``workers=1``), in a ``ProcessPoolExecutor``, or as Ray tasks
(``ray.remote(run_block)``, ``prove-gym synth --ray``) on a local Ray or a
cluster. The last two share one scheduling loop (:func:`_run_blocks`) over a
:class:`_BlockRunner`; the bytes written are the same in all three.
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from collections.abc import Callable, Collection, Hashable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypeVar

from prove_gym.registry import Registry, get_registry
from prove_gym.server.state import stable_int
from prove_gym.synth.config import BLOCK_SEED_BASE, SynthConfig, resolve_servers
from prove_gym.synth.generate import BlockResult, Candidate, View, run_block
from prove_gym.synth.validate import DedupIndex
from prove_gym.task import Task

if TYPE_CHECKING:
    from ray import ObjectRef


@dataclass
class SynthResult:
    """A synthesized dataset and how it came about.

    Attributes:
        config: The flags it was made with.
        servers: Servers in output order.
        tasks: The tasks, numbered, grouped by server in block order.
        drops: Why candidates were not kept (``near_duplicate`` included).
        server_drops: The same, per server (a reason such as ``step_failed:<tool>`` names
            the tool without its server).
        candidates: Candidates considered (kept + dropped).
        blocks: Blocks consumed.
        seconds: Wall time of the run (reported, never written to files).
        missing: Servers that fell short of their quota (server -> tasks short).
        warnings: What a reader of the output should know that the files do not say
            (a server with no test tasks, and why).
        writer: What the LLM writer did to the user turns of the kept tasks
            (``accepted``, ``rejected:<reason>``); empty for template text.
    """

    config: SynthConfig
    servers: list[str]
    tasks: list[Task] = field(default_factory=list)
    drops: Counter[str] = field(default_factory=Counter)
    server_drops: dict[str, Counter[str]] = field(default_factory=dict)
    candidates: int = 0
    blocks: int = 0
    seconds: float = 0.0
    missing: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    writer: Counter[str] = field(default_factory=Counter)

    def split(self, name: str) -> list[Task]:
        """Tasks of the ``train`` or ``test`` split."""
        return [t for t in self.tasks if t.meta.get("split") == name]


def quotas(n: int, servers: list[str]) -> dict[str, int]:
    """``n`` split evenly; the first servers get one more when it does not divide."""
    base, extra = divmod(n, len(servers))
    return {s: base + (1 if i < extra else 0) for i, s in enumerate(servers)}


MIX_KINDS = ("abstention", "complete", "missing", "minimal")
"""What a kept task counts toward in a server's mix: a whole abstention task, or the
information level of a task that calls tools."""


def mix_kind(task: Task) -> str:
    """The :data:`MIX_KINDS` entry ``task`` counts toward."""
    if task.meta["knobs"].get("abstention"):
        return "abstention"
    return str(task.meta["info_level"])


def mix_targets(cfg: SynthConfig, quota: int) -> dict[str, int]:
    """How many tasks of each :data:`MIX_KINDS` entry one server's quota holds.

    ``abstention_rate`` of the quota are abstention tasks; the rest split by
    ``info_levels``. Counts are rounded by largest remainder, so they add up to the
    quota and each share is as close as whole tasks allow.

    >>> mix_targets(SynthConfig(), 50)
    {'abstention': 4, 'complete': 28, 'missing': 9, 'minimal': 9}
    """
    abstention = min(quota, round(cfg.abstention_rate * quota))
    rest = quota - abstention
    total = sum(cfg.info_levels) or 1.0
    exact = [share / total * rest for share in cfg.info_levels]
    counts = [math.floor(x) for x in exact]
    order = sorted(range(3), key=lambda i: (counts[i] - exact[i], i))  # largest remainder first
    for i in order[: rest - sum(counts)]:
        counts[i] += 1
    return {"abstention": abstention, **dict(zip(MIX_KINDS[1:], counts, strict=True))}


COVERAGE_BLOCKS = 24
"""Blocks a server may run past its quota while some of its tools are in no kept task's
gold (see :meth:`_Collector._cover`)."""
COVERAGE_MISSES = 2
"""Coverage blocks in a row that do not even reach an unused tool after which a server
stops looking: a tool that no chain reaches on these states is not worth more blocks. A
block whose candidates called one and failed on its precondition (``rmdir`` needs an
empty folder, which only a chain that empties one has) is no miss (such a tool comes in
about one block in ten, so two blocks in a row without it are common)."""


def reaches(reason: str, tools: Collection[str]) -> bool:
    """Whether a candidate dropped for ``reason`` got as far as calling (or grounding) one
    of ``tools``: ``step_failed:rmdir``, ``ungroundable:rmdir.path``, ``noop_write:rmdir``.

    >>> reaches("ungroundable:rmdir.path", ["rmdir"]), reaches("near_duplicate", ["rmdir"])
    (True, False)
    """
    kind, _, rest = reason.partition(":")
    return kind in ("step_failed", "ungroundable", "noop_write") and rest.split(".")[0] in tools


def gold_tools(task: Task) -> list[str]:
    """The tools ``task``'s gold calls, once per call (what the report counts per tool)."""
    return [step.name for step in task.scored_steps]


class _Collector:
    """Consumes block results per server in block order until each quota is met, then,
    while some tool of the server is in no kept gold (and the quota is at least its number
    of tools), for up to :data:`COVERAGE_BLOCKS` more blocks swaps in tasks that call one
    (:meth:`_cover`)."""

    def __init__(
        self,
        cfg: SynthConfig,
        servers: list[str],
        result: SynthResult,
        registry: Registry | None = None,
    ) -> None:
        registry = registry or get_registry()
        self.cfg = cfg
        self.quota = quotas(cfg.n, servers)
        self.kept: dict[str, list[Task]] = {s: [] for s in servers}
        self.dedup = {s: DedupIndex(cfg.dedup_threshold) for s in servers}
        self.next: dict[str, int] = dict.fromkeys(servers, 0)
        self.buffer: dict[tuple[str, int], BlockResult] = {}
        self.result = result
        per_block = max(1, cfg.block_size)
        self.max_blocks = {s: max(8, 25 * math.ceil(q / per_block)) for s, q in self.quota.items()}
        self.yields: dict[str, list[int]] = {s: [] for s in servers}
        self.targets = {s: mix_targets(cfg, q) for s, q in self.quota.items()}
        self.mix: dict[str, Counter[str]] = {s: Counter() for s in servers}
        # per tool, how many gold calls of the kept tasks call it
        self.used: dict[str, Counter[str]] = {s: Counter() for s in servers}
        self.tools = {s: [t.name for t in registry.get_server(s).visible_tools()] for s in servers}
        self.full_at: dict[str, int] = {}  # the block that filled each server's quota
        self.misses = dict.fromkeys(servers, 0)  # coverage blocks in a row that found none
        # per server, before block k was absorbed: how many tasks were kept, the mix and
        # the tools used
        self.history: dict[str, list[tuple[int, Counter[str], Counter[str]]]] = {
            s: [(0, Counter(), Counter())] for s in servers
        }

    def done(self, server: str) -> bool:
        if self.next[server] >= self.max_blocks[server]:
            return True
        if len(self.kept[server]) < self.quota[server]:
            return False
        full_at = self.full_at.get(server, self.next[server])
        return (
            self.quota[server] < len(self.tools[server])  # too few tasks to call every tool
            or not self.unused(server)
            or self.next[server] > full_at + COVERAGE_BLOCKS
            or self.misses[server] >= COVERAGE_MISSES
        )

    def unused(self, server: str) -> list[str]:
        """The server's tools in no kept task's gold, in the order it declares them."""
        return [t for t in self.tools[server] if not self.used[server][t]]

    def add(self, block: BlockResult, on_task: Callable[[int], None]) -> None:
        self.buffer[(block.server, block.block)] = block
        server = block.server
        while not self.done(server) and (server, self.next[server]) in self.buffer:
            self._absorb(self.buffer.pop((server, self.next[server])), on_task)
            self.next[server] += 1
            self.history[server].append(
                (len(self.kept[server]), Counter(self.mix[server]), Counter(self.used[server]))
            )

    def _absorb(self, block: BlockResult, on_task: Callable[[int], None]) -> None:
        server = block.server
        self.result.blocks += 1
        if len(self.kept[server]) >= self.quota[server]:
            self._cover(block)
            return
        before = len(self.kept[server])
        for outcome in block.outcomes:
            if len(self.kept[server]) >= self.quota[server]:
                break
            self.result.candidates += 1
            if isinstance(outcome, str):
                self._drop(server, outcome)
                continue
            kind = mix_kind(outcome.task)
            if (
                self.mix[server][kind] >= self.targets[server][kind]
                and self.next[server] < self.max_blocks[server] // 2
            ):
                # its share is full: keep room for the kinds that lag (a server that cannot
                # make some kind at all keeps anything after half its block budget)
                self._drop(server, f"share_full:{kind}")
                continue
            if self.dedup[server].near_duplicate(outcome.features):
                self._drop(server, "near_duplicate")
                continue
            self.mix[server][kind] += 1
            self.used[server].update(gold_tools(outcome.task))
            self.dedup[server].add(outcome.features)
            self.result.writer.update(outcome.rewrites)
            self.kept[server].append(self._number(outcome, len(self.kept[server])))
        if len(self.kept[server]) >= self.quota[server]:
            self.full_at[server] = block.block
        gained = len(self.kept[server]) - before
        self.yields[server].append(gained)
        if gained:
            on_task(gained)

    def _drop(self, server: str, reason: str) -> None:
        self.result.drops[reason] += 1
        self.result.server_drops.setdefault(server, Counter())[reason] += 1

    def _cover(self, block: BlockResult) -> None:
        """A block past the quota: each candidate whose gold calls a tool that no kept gold
        calls replaces the latest kept task of the same mix kind whose gold tools all stay
        in some other kept gold. The mix, the count and every other tool's presence hold;
        a candidate that brings no unused tool, or finds no such task, is dropped."""
        server = block.server
        kept, used = self.kept[server], self.used[server]
        unused = self.unused(server)
        self.misses[server] += 1
        for outcome in block.outcomes:
            self.result.candidates += 1
            if isinstance(outcome, str):
                self._drop(server, outcome)
                if reaches(outcome, unused):
                    self.misses[server] = 0  # reached, and failed on this state: try on
                continue
            tools = gold_tools(outcome.task)
            if not any(not used[t] for t in tools):
                self._drop(server, "coverage:no_unused_tool")
                continue
            self.misses[server] = 0
            if self.dedup[server].near_duplicate(outcome.features):
                self._drop(server, "near_duplicate")
                continue
            kind = mix_kind(outcome.task)
            for i in range(len(kept) - 1, -1, -1):
                if mix_kind(kept[i]) != kind:
                    continue
                gone = Counter(gold_tools(kept[i]))
                if all(used[t] > n for t, n in gone.items()):
                    break
            else:
                self._drop(server, "coverage:no_swap")
                continue
            used.subtract(gone)
            used.update(tools)
            self.dedup[server].add(outcome.features)
            kept[i] = self._number(outcome, i)

    def view(self, server: str, block: int) -> View | None:
        """What ``block`` of ``server`` starts from: the collector as it was once it had
        absorbed every block of the server but the ``view_lag - 1`` right before this one;
        ``None`` until then.

        A kind is full only while the collector still drops full kinds (the first half of
        the server's block budget), as :meth:`_absorb` decides.
        """
        at = max(0, block - self.cfg.view_lag + 1)
        if at > self.next[server]:
            return None
        n_kept, mix, used = self.history[server][at]
        targets = self.targets[server]
        full = frozenset(
            k for k in MIX_KINDS if mix[k] >= targets[k] and block < self.max_blocks[server] // 2
        )
        counts = tuple(sorted((t, n) for t, n in used.items() if n > 0))
        if n_kept < self.quota[server]:
            return View(self.dedup[server].first(n_kept), full, counts)
        # past the quota: a block only looks for the tools no kept gold calls yet, of any
        # kind (a task it brings replaces one of its own kind)
        only = tuple(t for t in self.tools[server] if not used[t])
        return View(self.dedup[server].first(n_kept), frozenset(), counts, only)

    def _number(self, cand: Candidate, k: int) -> Task:
        task = cand.task
        return task.model_copy(update={"id": f"{task.server}-{self.cfg.seed}-{k:05d}"})

    def blocks_wanted(self, server: str, in_flight: int) -> int:
        """How many more blocks to start for ``server`` given what is running."""
        if self.done(server):
            return 0
        if len(self.kept[server]) >= self.quota[server]:
            return max(0, 1 - in_flight)  # coverage blocks, one at a time
        need = self.quota[server] - len(self.kept[server])
        seen = self.yields[server]
        rate = max(1.0, sum(seen) / len(seen)) if seen else self.cfg.block_size * 0.5
        room = self.max_blocks[server] - self.next[server] - in_flight
        return max(0, min(room, math.ceil(need / rate) - in_flight))


def synthesize(
    cfg: SynthConfig,
    *,
    registry: Registry | None = None,
    progress: bool = False,
    ray: str | None = None,
) -> SynthResult:
    """Synthesize ``cfg.n`` validated tasks over ``cfg.servers``.

    Where the blocks run never changes the result: ``workers=1`` runs them in this
    process, ``workers > 1`` in a pool of that many processes, and ``ray`` as Ray
    tasks; either pool keeps up to ``2 * workers`` blocks in flight.

    Args:
        cfg: Every knob (see :class:`~prove_gym.synth.config.SynthConfig`).
        registry: Where servers come from; a custom one needs ``workers=1`` and no
            ``ray`` (workers load the installed plugins).
        progress: Show a tqdm progress bar on stderr.
        ray: Run blocks as Ray tasks: ``"local"`` starts a Ray runtime of
            ``cfg.workers`` CPUs on this machine (no dashboard) and shuts it down
            at the end; any other value is an address passed to ``ray.init``
            (``"auto"``, ``"host:6379"``, ``"ray://host:10001"``), whose cluster must
            have prove_gym and the plugins installed. If this process has already
            called ``ray.init``, that runtime is used as it is and left running (call
            it yourself to pass a ``runtime_env`` or other options). Needs the
            ``ray`` extra (``pip install 'prove-gym[ray]'``).

    Raises:
        ValueError: A custom registry with ``workers > 1`` or ``ray``.
        ModuleNotFoundError: ``ray`` is given and Ray is not installed (``name`` is
            ``"ray"``).
    """
    default = get_registry()
    registry = registry or default
    if (cfg.workers > 1 or ray is not None) and registry is not default:
        raise ValueError(
            "a custom registry needs workers=1 and no Ray (workers load the installed plugins)"
        )
    servers = resolve_servers(cfg.servers, registry)
    if not servers:
        raise ValueError("no servers are installed")
    result = SynthResult(config=cfg, servers=servers)
    collector = _Collector(cfg, servers, result, registry)
    started = time.perf_counter()
    from tqdm import tqdm

    with tqdm(total=cfg.n, desc="synth", unit="task", disable=not progress, file=sys.stderr) as bar:
        if ray is not None:
            with _ray_runner(ray, cfg.workers) as runner:
                _run_blocks(cfg, servers, collector, bar.update, runner)
        elif cfg.workers > 1:
            with _process_runner(cfg.workers) as process_runner:
                _run_blocks(cfg, servers, collector, bar.update, process_runner)
        else:
            for server in servers:
                while not collector.done(server):
                    at = collector.next[server]
                    view = collector.view(server, at)
                    block = run_block(cfg, server, at, view, registry=registry)
                    collector.add(block, bar.update)
    result.seconds = time.perf_counter() - started
    for server in servers:
        tasks, warning = assign_splits(cfg, server, collector.kept[server])
        result.tasks.extend(tasks)
        if warning:
            result.warnings.append(warning)
        short = collector.quota[server] - len(collector.kept[server])
        if short > 0:
            result.missing[server] = short
    if result.tasks and not result.split("test"):
        if cfg.test_fraction <= 0:
            why = "--test-fraction is 0"
        elif result.warnings:
            why = "no server could hold a state out, as said above"
        else:
            why = "no server has two tasks to split"
        result.warnings.append(f"the test split is empty ({why})")
    return result


def assign_splits(cfg: SynthConfig, server: str, tasks: list[Task]) -> tuple[list[Task], str]:
    """One server's tasks with ``meta.split`` set, and a warning when none is ``test``.

    The split is by initial state ``(seed, size)``, so no test state is seen in training:

    - a pool seed (``block_states`` 0) is ``test`` when it is one of
      :meth:`~prove_gym.synth.config.SynthConfig.test_seeds` (the same in every dataset);
    - of the server's block states, taken in an order drawn from ``(seed, server)``, each
      goes to ``test`` while the test tasks stay within ``round(test_fraction × tasks)``
      (at least one); if no state is that small, the smallest one does. One state always
      stays in training.

    So every server with tasks on two states or more has test tasks, about
    ``test_fraction`` of them; a server whose tasks share one state has none, and the
    warning says so. The split depends only on the kept tasks and the flags.
    """
    if not tasks:
        return tasks, ""
    pool_test = cfg.test_seeds()
    counts: Counter[tuple[int, int | None]] = Counter(
        (t.seed, t.size) for t in tasks if t.seed >= BLOCK_SEED_BASE
    )
    test: set[tuple[int, int | None]] = set()
    if cfg.test_fraction > 0 and len(counts) >= 2:
        target = max(1, round(cfg.test_fraction * sum(counts.values())))
        order = sorted(
            counts, key=lambda st: (stable_int("synth-split", cfg.seed, server, *st), st)
        )
        held = 0
        for state in order[:-1]:
            if held + counts[state] <= target:
                test.add(state)
                held += counts[state]
        if not test:
            test.add(min(order[:-1], key=lambda st: counts[st]))
    out = [
        t.model_copy(
            update={
                "meta": {
                    **t.meta,
                    "split": "test" if (t.seed, t.size) in test or t.seed in pool_test else "train",
                }
            }
        )
        for t in tasks
    ]
    if len(tasks) < 2 or cfg.test_fraction <= 0 or any(t.meta["split"] == "test" for t in out):
        return out, ""
    if len(counts) >= 2:  # never: a state of two or more is held out above
        why = "no state could be held out"
    elif sum(counts.values()) == len(tasks):
        why = f"all {len(tasks)} of its tasks come from one initial state"
    elif not counts:
        why = f"none of its {len(tasks)} tasks is on a held-out pool seed {sorted(pool_test)}"
    else:
        why = f"its {len(tasks)} tasks come from one block state and no held-out pool seed"
    return out, f"{server}: no test tasks ({why})"


H = TypeVar("H", bound=Hashable)


class _BlockRunner(Protocol[H]):
    """Runs :func:`~prove_gym.synth.generate.run_block` elsewhere, for :func:`_run_blocks`.

    ``H`` is the handle of one running block (a ``Future``, a Ray ``ObjectRef``). The
    workers call ``run_block`` without a registry, so each loads the installed plugins.
    """

    def submit(self, cfg: SynthConfig, server: str, block: int, view: View) -> H:
        """Start ``run_block(cfg, server, block, view)``; return its handle at once."""
        ...

    def wait(self, running: Collection[H]) -> list[tuple[H, BlockResult]]:
        """Wait until one or more of ``running`` are done; return those with their results.

        A block that raised raises here.
        """
        ...

    def cancel(self, running: Collection[H]) -> None:
        """Give up on blocks whose results are no longer wanted."""
        ...


class _ProcessRunner:
    """Blocks in a ``concurrent.futures.ProcessPoolExecutor``."""

    def __init__(self, pool: ProcessPoolExecutor) -> None:
        self.pool = pool

    def submit(self, cfg: SynthConfig, server: str, block: int, view: View) -> Future[BlockResult]:
        return self.pool.submit(run_block, cfg, server, block, view)

    def wait(
        self, running: Collection[Future[BlockResult]]
    ) -> list[tuple[Future[BlockResult], BlockResult]]:
        finished, _ = wait(running, return_when=FIRST_COMPLETED)
        return [(fut, fut.result()) for fut in finished]

    def cancel(self, running: Collection[Future[BlockResult]]) -> None:
        for fut in running:
            fut.cancel()


class _RayRunner:
    """Blocks as Ray tasks of ``ray.remote(run_block)`` (one CPU each) on the connected cluster."""

    def __init__(self) -> None:
        import ray

        self.remote = ray.remote(run_block)

    def submit(
        self, cfg: SynthConfig, server: str, block: int, view: View
    ) -> ObjectRef[BlockResult]:
        # Ray's typing stubs count only the leading parameters before a keyword-only one
        return self.remote.remote(cfg, server, block, view)  # type: ignore[call-arg]

    def wait(
        self, running: Collection[ObjectRef[BlockResult]]
    ) -> list[tuple[ObjectRef[BlockResult], BlockResult]]:
        import ray

        ready, _ = ray.wait(list(running), num_returns=1)
        return list(zip(ready, ray.get(ready), strict=True))

    def cancel(self, running: Collection[ObjectRef[BlockResult]]) -> None:
        import ray

        for ref in running:
            ray.cancel(ref)


@contextmanager
def _process_runner(workers: int) -> Iterator[_ProcessRunner]:
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield _ProcessRunner(pool)


@contextmanager
def _ray_runner(address: str, workers: int) -> Iterator[_RayRunner]:
    """Ray as :func:`synthesize` describes it: started here (and shut down) or joined."""
    try:
        import ray
    except ModuleNotFoundError as exc:
        if exc.name != "ray":
            raise  # Ray is there but broken: show what it lacks
        raise ModuleNotFoundError(
            "the Ray backend needs Ray: pip install 'prove-gym[ray]'", name="ray"
        ) from None
    started = not ray.is_initialized()
    if started:
        if address == "local":
            ray.init(address="local", num_cpus=workers, include_dashboard=False)
        else:
            ray.init(address=address)
    try:
        yield _RayRunner()
    finally:
        if started:
            ray.shutdown()


def _run_blocks(
    cfg: SynthConfig,
    servers: list[str],
    collector: _Collector,
    on_task: Callable[[int], None],
    runner: _BlockRunner[H],
) -> None:
    """Keep up to ``2 * cfg.workers`` blocks in flight on ``runner`` until every server is done.

    Each server gets as many blocks as its remaining quota needs at its yield so
    far, and a block starts only once its view is known (all blocks of its server but
    the ``view_lag - 1`` before it absorbed, so at most ``view_lag`` run at once per
    server); results
    go to the collector in whatever order they finish (it puts them back in block
    order). Blocks still in flight at the end, or when something raises, are
    cancelled.
    """
    submitted = dict.fromkeys(servers, 0)
    running: dict[H, str] = {}
    try:
        while True:
            for server in servers:
                flying = sum(1 for s in running.values() if s == server)
                start = min(
                    collector.blocks_wanted(server, flying),
                    2 * cfg.workers - len(running),
                )
                for _ in range(max(0, start)):
                    block = max(submitted[server], collector.next[server])
                    if block >= collector.max_blocks[server]:
                        break
                    view = collector.view(server, block)
                    if view is None:
                        break  # it starts once block - view_lag is absorbed
                    running[runner.submit(cfg, server, block, view)] = server
                    submitted[server] = block + 1
            if not running:
                return  # every server has its quota or used up its blocks
            for handle, block_result in runner.wait(running):
                running.pop(handle)
                collector.add(block_result, on_task)
            if all(collector.done(s) for s in servers):
                return
    finally:
        if running:
            runner.cancel(running)
