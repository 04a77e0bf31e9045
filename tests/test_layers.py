"""The core's import graph: layered, and free of cycles.

``lint-imports`` (CI; contracts in pyproject.toml) checks that every runtime import points
down the layers. These tests prove the graph has no cycle at all, and that the only imports
pointing upwards are annotation-only ones (``if TYPE_CHECKING:``), each listed below with
its reason, so that a new one is a decision somebody wrote down.
"""

from __future__ import annotations

import grimp
import pytest

# Annotation-only imports that point up a layer, and why each one is there. None runs.
UPWARD_ANNOTATIONS = {
    # A hook returns reward components; the registry holds them by name. Components are
    # a reward-layer type (they score trajectories) which the registry never calls.
    ("prove_gym.hookspecs", "prove_gym.reward.components"): "hook return type",
    ("prove_gym.registry", "prove_gym.reward.components"): "registry.reward_components type",
    # A component's compute() reads a ScoringContext and bounds() a RewardConfig; both are
    # built from the components (the default config lists them).
    ("prove_gym.reward.components", "prove_gym.reward.context"): "compute(ctx) argument",
    ("prove_gym.reward.components", "prove_gym.reward.config"): "bounds(config) argument",
    ("prove_gym.reward.efficiency", "prove_gym.reward.config"): "efficiency(config=) argument",
    # A tool's context and a session point back at the server that made them.
    ("prove_gym.server.tool", "prove_gym.server.base"): "ToolContext.server",
    ("prove_gym.server.session", "prove_gym.server.base"): "Session.server",
}


@pytest.fixture(scope="module")
def graphs() -> tuple[grimp.ImportGraph, grimp.ImportGraph]:
    runtime = grimp.build_graph("prove_gym", cache_dir=None, exclude_type_checking_imports=True)
    everything = grimp.build_graph("prove_gym", cache_dir=None)
    return runtime, everything


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_at_run_time(graphs: tuple[grimp.ImportGraph, grimp.ImportGraph]) -> None:
    runtime, _ = graphs
    assert _cycles(runtime) == []


def test_only_the_listed_annotations_point_upwards(
    graphs: tuple[grimp.ImportGraph, grimp.ImportGraph],
) -> None:
    runtime, everything = graphs
    for importer, imported in UPWARD_ANNOTATIONS:
        assert everything.direct_import_exists(importer=importer, imported=imported), (
            f"{importer} no longer imports {imported}: remove it from UPWARD_ANNOTATIONS"
        )
        assert not runtime.direct_import_exists(importer=importer, imported=imported), (
            f"{importer} imports {imported} at run time, against the layers"
        )
        everything.remove_import(importer=importer, imported=imported)
    assert _cycles(everything) == []


def test_the_cycle_finder_finds_cycles() -> None:
    graph = grimp.ImportGraph()
    for a, b in [("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")]:
        graph.add_import(importer=a, imported=b)
    assert _cycles(graph) == [["p.a", "p.b", "p.c"]]
