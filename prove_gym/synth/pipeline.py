"""Fan blocks out over workers, keep them in order, drop near-duplicates, number the tasks.

Each server's blocks are consumed strictly in block order, whatever order the
workers finish them in, and a server stops at its quota. So the dataset depends
only on the seed and the flags: ``--workers 1`` and ``--workers 8`` write the
same bytes, and ``--n 200`` starts with the tasks of ``--n 100`` for each server.

The work function (:func:`~prove_gym.synth.generate.run_block`) is a pure
function of ``(config, server, block)``, which is all a Ray task would need:
``ray.remote(run_block).remote(cfg, server, b)`` can replace the process pool.
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field

from prove_gym.registry import Registry, get_registry
from prove_gym.synth.config import SynthConfig
from prove_gym.synth.generate import BlockResult, Candidate, run_block
from prove_gym.synth.validate import DedupIndex
from prove_gym.task import Task


@dataclass
class SynthResult:
    """A synthesized dataset and how it came about.

    Attributes:
        config: The flags it was made with.
        servers: Servers in output order.
        tasks: The tasks, numbered, grouped by server in block order.
        drops: Why candidates were not kept (``near_duplicate`` included).
        candidates: Candidates considered (kept + dropped).
        blocks: Blocks consumed.
        seconds: Wall time of the run (reported, never written to files).
        missing: Servers that fell short of their quota (server -> tasks short).
    """

    config: SynthConfig
    servers: list[str]
    tasks: list[Task] = field(default_factory=list)
    drops: Counter[str] = field(default_factory=Counter)
    candidates: int = 0
    blocks: int = 0
    seconds: float = 0.0
    missing: dict[str, int] = field(default_factory=dict)

    def split(self, name: str) -> list[Task]:
        """Tasks of the ``train`` or ``test`` split."""
        return [t for t in self.tasks if t.meta.get("split") == name]


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


def quotas(n: int, servers: list[str]) -> dict[str, int]:
    """``n`` split evenly; the first servers get one more when it does not divide."""
    base, extra = divmod(n, len(servers))
    return {s: base + (1 if i < extra else 0) for i, s in enumerate(servers)}


class _Collector:
    """Consumes block results per server in block order until each quota is met."""

    def __init__(self, cfg: SynthConfig, servers: list[str], result: SynthResult) -> None:
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
        self.abstentions: Counter[str] = Counter()

    def done(self, server: str) -> bool:
        return len(self.kept[server]) >= self.quota[server] or (
            self.next[server] >= self.max_blocks[server]
        )

    def add(self, block: BlockResult, on_task: Callable[[int], None]) -> None:
        self.buffer[(block.server, block.block)] = block
        server = block.server
        while not self.done(server) and (server, self.next[server]) in self.buffer:
            self._absorb(self.buffer.pop((server, self.next[server])), on_task)
            self.next[server] += 1

    def _absorb(self, block: BlockResult, on_task: Callable[[int], None]) -> None:
        server = block.server
        self.result.blocks += 1
        before = len(self.kept[server])
        for outcome in block.outcomes:
            if len(self.kept[server]) >= self.quota[server]:
                break
            self.result.candidates += 1
            if isinstance(outcome, str):
                self.result.drops[outcome] += 1
                continue
            abstention = bool(outcome.task.meta["knobs"].get("abstention"))
            kept = self.kept[server]
            if abstention and self.abstentions[server] >= self.cfg.abstention_rate * (
                len(kept) + 1
            ):
                self.result.drops["abstention_share"] += 1
                continue
            if self.dedup[server].near_duplicate(outcome.features):
                self.result.drops["near_duplicate"] += 1
                continue
            self.abstentions[server] += abstention
            self.dedup[server].add(outcome.features)
            self.kept[server].append(self._number(outcome, len(self.kept[server])))
        gained = len(self.kept[server]) - before
        self.yields[server].append(gained)
        if gained:
            on_task(gained)

    def _number(self, cand: Candidate, k: int) -> Task:
        task = cand.task
        return task.model_copy(update={"id": f"{task.server}-{self.cfg.seed}-{k:05d}"})

    def blocks_wanted(self, server: str, in_flight: int) -> int:
        """How many more blocks to start for ``server`` given what is running."""
        if self.done(server):
            return 0
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
) -> SynthResult:
    """Synthesize ``cfg.n`` validated tasks over ``cfg.servers``.

    Args:
        cfg: Every knob (see :class:`~prove_gym.synth.config.SynthConfig`).
        registry: Where servers come from; a custom one needs ``workers=1`` (worker
            processes load the installed plugins).
        progress: Show a tqdm progress bar on stderr.
    """
    default = get_registry()
    registry = registry or default
    if cfg.workers > 1 and registry is not default:
        raise ValueError("a custom registry needs workers=1 (worker processes load plugins)")
    servers = resolve_servers(cfg.servers, registry)
    if not servers:
        raise ValueError("no servers are installed")
    result = SynthResult(config=cfg, servers=servers)
    collector = _Collector(cfg, servers, result)
    started = time.perf_counter()
    from tqdm import tqdm

    with tqdm(total=cfg.n, desc="synth", unit="task", disable=not progress, file=sys.stderr) as bar:
        if cfg.workers <= 1:
            for server in servers:
                while not collector.done(server):
                    block = run_block(cfg, server, collector.next[server], registry)
                    collector.add(block, bar.update)
        else:
            _run_pool(cfg, servers, collector, bar.update)
    result.seconds = time.perf_counter() - started
    for server in servers:
        result.tasks.extend(collector.kept[server])
        short = collector.quota[server] - len(collector.kept[server])
        if short > 0:
            result.missing[server] = short
    return result


def _run_pool(
    cfg: SynthConfig,
    servers: list[str],
    collector: _Collector,
    on_task: Callable[[int], None],
) -> None:
    submitted = dict.fromkeys(servers, 0)
    running: dict[Future[BlockResult], str] = {}
    with ProcessPoolExecutor(max_workers=cfg.workers) as pool:
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
                    running[pool.submit(run_block, cfg, server, block)] = server
                    submitted[server] = block + 1
            if not running:
                return  # every server has its quota or used up its blocks
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                running.pop(fut)
                collector.add(fut.result(), on_task)
            if all(collector.done(s) for s in servers):
                for fut in running:
                    fut.cancel()
                return
