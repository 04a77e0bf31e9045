"""The tool dependency graph of one server, derived from the tools' declarations.

Every ordered pair of tools (A, B) is one of:

- **explicit**: A's result holds an entity that B takes as an identifier
  parameter (``A.returns`` ∩ kinds of B's ``Entity`` parameters), e.g.
  ``search_events -> add_invitee`` through ``event``. Data flows from A to B.
- **implicit**: no data flows, but A is a write that changes what B reads or
  writes: both touch a common entity kind (one a tool takes or returns), e.g.
  ``create_event -> list_events``. A tool that names no entity at all acts on
  the server's singleton state (``@state``: a car's engine, a shell's working
  directory); such a write changes what every other tool sees.
- unrelated otherwise.

No LLM is needed: ``Entity(...)``, ``returns=`` and ``writes=`` say it all. The
paper classifies pairs with an LLM instead; :func:`refine_graph` does that on top
of the declared graph through any OpenAI-compatible endpoint, cached on disk by
a hash of the tool schemas.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from prove_gym.server.base import Server
    from prove_gym.server.tool import ToolSpec
    from prove_gym.synth.llm import LLMClient

EdgeKind = Literal["explicit", "implicit"]
STATE = "@state"
"""Pseudo entity kind touched by tools that name no entity (the server's singleton state)."""

GRAPH_PROMPT_VERSION = 1


@dataclass(frozen=True, slots=True)
class Edge:
    """A directed dependency ``src -> dst`` between two tools of one server.

    Attributes:
        src: The tool that runs first.
        dst: The tool that depends on it.
        kind: ``"explicit"`` (data flows) or ``"implicit"`` (state set up).
        via: Entity kinds that connect them (``"@state"`` for the singleton state).
        params: ``dst`` parameters fed by ``src`` (explicit edges only).
        source: ``"declared"`` (from the declarations) or ``"llm"``.
        reason: Why, in words (LLM edges).
    """

    src: str
    dst: str
    kind: EdgeKind
    via: tuple[str, ...] = ()
    params: tuple[str, ...] = ()
    source: str = "declared"
    reason: str = ""


@dataclass(frozen=True, slots=True)
class ToolProfile:
    """What the graph needs to know about one tool."""

    name: str
    writes: bool
    destructive: bool
    consumes: dict[str, str]  # parameter -> entity kind
    required: frozenset[str]
    returns: tuple[str, ...]

    @property
    def touches(self) -> frozenset[str]:
        kinds = set(self.consumes.values()) | set(self.returns)
        return frozenset(kinds or {STATE})

    @classmethod
    def of(cls, spec: ToolSpec) -> ToolProfile:
        return cls(
            name=spec.name,
            writes=spec.writes,
            destructive=spec.destructive,
            consumes={p: e.name for p, e in spec.entity_params.items()},
            required=frozenset(spec.required),
            returns=tuple(spec.returns),
        )


@dataclass
class ToolGraph:
    """Nodes are a server's visible tools; edges are :class:`Edge` s.

    Attributes:
        server: Server name.
        tools: Tool names in declaration order.
        edges: The edges, ordered by (src, dst) declaration order.
        schema_hash: Hash of the tool schemas the graph was derived from.
        writes: Names of the tools that write.
        refined_by: The LLM model that refined it, if any.
    """

    server: str
    tools: tuple[str, ...]
    edges: tuple[Edge, ...]
    schema_hash: str
    writes: frozenset[str] = frozenset()
    refined_by: str | None = None
    _out: dict[str, list[Edge]] = field(default_factory=dict, init=False, repr=False)
    _in: dict[str, list[Edge]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._out = {t: [] for t in self.tools}
        self._in = {t: [] for t in self.tools}
        for e in self.edges:
            self._out[e.src].append(e)
            self._in[e.dst].append(e)

    def out_edges(self, tool: str) -> list[Edge]:
        """Edges leaving ``tool`` (tools that may follow it)."""
        return self._out.get(tool, [])

    def in_edges(self, tool: str) -> list[Edge]:
        """Edges entering ``tool`` (tools that may come first)."""
        return self._in.get(tool, [])

    def edge(self, src: str, dst: str) -> Edge | None:
        return next((e for e in self._out.get(src, []) if e.dst == dst), None)

    def counts(self) -> dict[str, int]:
        """Number of edges by kind."""
        out = {"explicit": 0, "implicit": 0}
        for e in self.edges:
            out[e.kind] += 1
        return out

    def isolated(self) -> list[str]:
        """Tools with no edge at all (chains pair them with unrelated tools)."""
        return [t for t in self.tools if not self._out[t] and not self._in[t]]

    # ------------------------------------------------------------ output
    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "schema_hash": self.schema_hash,
            "refined_by": self.refined_by,
            "tools": [{"name": t, "writes": t in self.writes} for t in self.tools],
            "counts": self.counts(),
            "edges": [
                {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(e).items()}
                for e in self.edges
            ],
        }

    def to_text(self) -> str:
        """A readable listing: each tool with the tools that may follow it."""
        c = self.counts()
        lines = [
            f"{self.server}: {len(self.tools)} tools, {len(self.edges)} edges "
            f"({c['explicit']} explicit, {c['implicit']} implicit)"
            + (f", refined by {self.refined_by}" if self.refined_by else "")
            + f"; schema {self.schema_hash[:12]}",
            "",
        ]
        width = max((len(t) for t in self.tools), default=4)
        for t in self.tools:
            mode = "write" if t in self.writes else "read "
            outs = self._out[t]
            if not outs:
                note = "(no dependants)" if self._in[t] else "(isolated)"
                lines.append(f"{t:<{width}}  {mode}  {note}")
                continue
            for i, e in enumerate(outs):
                head = f"{t:<{width}}  {mode}" if i == 0 else " " * (width + 7)
                via = ",".join(e.via)
                params = f" -> {','.join(e.params)}" if e.params else ""
                tag = " [llm]" if e.source == "llm" else ""
                lines.append(f"{head}  -> {e.dst:<{width}}  {e.kind:<8}  {via}{params}{tag}")
        return "\n".join(lines)

    def to_dot(self) -> str:
        """Graphviz DOT: boxes are writes, ellipses reads; dashed edges are implicit."""
        out = [f'digraph "{self.server}" {{', "  rankdir=LR;", '  node [fontname="Helvetica"];']
        for t in self.tools:
            shape = "box" if t in self.writes else "ellipse"
            out.append(f'  "{t}" [shape={shape}];')
        for e in self.edges:
            style = "solid" if e.kind == "explicit" else "dashed"
            label = ",".join(e.via)
            out.append(f'  "{e.src}" -> "{e.dst}" [style={style}, label="{label}", fontsize=9];')
        out.append("}")
        return "\n".join(out) + "\n"

    def write_png(self, path: str | Path) -> str:
        """Draw the graph to PNG with Graphviz ``dot`` if installed, else matplotlib.

        Returns:
            ``"dot"`` or ``"matplotlib"``: what drew it.

        Raises:
            RuntimeError: Neither is available.
        """
        path = Path(path)
        dot = shutil.which("dot")
        if dot is not None:
            subprocess.run(
                [dot, "-Tpng", "-o", str(path)], input=self.to_dot().encode(), check=True
            )
            return "dot"
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise RuntimeError(
                "drawing a PNG needs Graphviz 'dot' on PATH or matplotlib "
                "(pip install 'prove-gym[plot]'); --dot writes the DOT text instead"
            ) from None
        n = max(len(self.tools), 1)
        pos = {
            t: (math.cos(2 * math.pi * i / n), math.sin(2 * math.pi * i / n))
            for i, t in enumerate(self.tools)
        }
        fig, ax = plt.subplots(figsize=(12, 12))
        for e in self.edges:
            (x0, y0), (x1, y1) = pos[e.src], pos[e.dst]
            ax.annotate(
                "",
                xy=(x1, y1),
                xytext=(x0, y0),
                arrowprops={
                    "arrowstyle": "->",
                    "alpha": 0.35,
                    "linestyle": "-" if e.kind == "explicit" else "--",
                    "color": "tab:blue" if e.kind == "explicit" else "tab:gray",
                },
            )
        for t, (x, y) in pos.items():
            ax.text(
                x,
                y,
                t,
                ha="center",
                va="center",
                fontsize=8,
                bbox={"boxstyle": "square" if t in self.writes else "round", "fc": "white"},
            )
        ax.set_xlim(-1.3, 1.3)
        ax.set_ylim(-1.3, 1.3)
        ax.set_axis_off()
        ax.set_title(f"{self.server}: solid = explicit, dashed = implicit; boxes write")
        fig.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(fig)
        return "matplotlib"


def schema_hash(server: Server) -> str:
    """SHA-256 of what the graph depends on: every visible tool's schema and declarations."""
    payload = [
        {
            "schema": t.openai_schema(),
            "writes": t.writes,
            "destructive": t.destructive,
            "returns": list(t.returns),
            "entities": {p: [e.name, e.many] for p, e in t.entity_params.items()},
        }
        for t in server.visible_tools()
    ]
    data = json.dumps([server.name, payload], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(data.encode()).hexdigest()


def derive_edges(profiles: Iterable[ToolProfile]) -> Iterator[Edge]:
    """The declared edges between tool profiles, in (src, dst) order."""
    tools = list(profiles)
    for a in tools:
        for b in tools:
            if a.name == b.name:
                continue
            shared = [k for k in a.returns if k in b.consumes.values()]
            if shared:
                params = tuple(p for p, k in b.consumes.items() if k in shared)
                yield Edge(a.name, b.name, "explicit", tuple(shared), params)
                continue
            if not a.writes:
                continue
            common = a.touches & b.touches
            if STATE in a.touches:
                common |= {STATE}
            if common:
                yield Edge(a.name, b.name, "implicit", tuple(sorted(common)))


def build_graph(server: Server) -> ToolGraph:
    """The declared dependency graph of ``server`` (no LLM)."""
    tools = server.visible_tools()
    profiles = [ToolProfile.of(t) for t in tools]
    return ToolGraph(
        server=server.name,
        tools=tuple(t.name for t in tools),
        edges=tuple(derive_edges(profiles)),
        schema_hash=schema_hash(server),
        writes=frozenset(t.name for t in tools if t.writes),
    )


# ---------------------------------------------------------------- LLM refinement
_GRAPH_SYSTEM = """You classify dependencies between the tools of one stateful tool server.
For an ordered pair (A, B): "explicit" if an output of A is a required input of B; "implicit"
if A must run first to set up state that B needs (no value flows); "none" otherwise.
You get the tools and the edges derived from their declarations. Reply with JSON only:
{"edges": [{"from": "A", "to": "B", "kind": "explicit" | "implicit" | "none", "reason": "..."}]}
listing only pairs whose classification differs from the derived edges: missing dependencies
to add, and derived edges that are wrong (kind "none")."""


def _describe_tools(server: Server) -> list[dict[str, Any]]:
    out = []
    for t in server.visible_tools():
        props = t.input_schema().get("properties", {})
        out.append(
            {
                "name": t.name,
                "mode": "write" if t.writes else "read",
                "description": t.description.split("\n\n")[0],
                "parameters": [
                    {
                        "name": p.name,
                        "type": props.get(p.name, {}).get("type", "any"),
                        "required": p.required,
                        **({"entity": p.entity.name} if p.entity else {}),
                    }
                    for p in t.params
                ],
                "returns": list(t.returns),
            }
        )
    return out


def refine_graph(
    server: Server,
    client: LLMClient,
    graph: ToolGraph | None = None,
    *,
    cache_dir: str | Path | None = None,
) -> ToolGraph:
    """Refine the declared graph with an LLM's pair classification (cached on disk).

    The reply is cached under ``cache_dir`` by the hash of the tool schemas, the
    model and the prompt version, so a second call (or a worker process) reads
    the file and sends nothing. Pairs naming unknown tools are ignored.
    """
    from prove_gym.synth.llm import LLMError, default_cache_dir, extract_json

    graph = graph or build_graph(server)
    key = hashlib.sha256(
        f"{graph.schema_hash}|{client.model}|{GRAPH_PROMPT_VERSION}".encode()
    ).hexdigest()
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = folder / "graphs" / f"{server.name}-{key[:24]}.json"
    if path.exists():
        reply = json.loads(path.read_text(encoding="utf-8"))
    else:
        declared = [[e.src, e.dst, e.kind] for e in graph.edges]
        messages = [
            {"role": "system", "content": _GRAPH_SYSTEM},
            {
                "role": "user",
                "content": json.dumps(
                    {"server": server.name, "tools": _describe_tools(server), "edges": declared},
                    ensure_ascii=False,
                ),
            },
        ]
        reply = extract_json(client.complete(messages, json_mode=True, cache=False))
        if not isinstance(reply, dict) or not isinstance(reply.get("edges"), list):
            raise LLMError('the graph reply is not {"edges": [...]}')
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(reply, sort_keys=True, indent=1), encoding="utf-8")
        tmp.replace(path)
    return apply_refinement(graph, reply.get("edges", []), refined_by=client.model)


def apply_refinement(
    graph: ToolGraph, pairs: Iterable[Any], *, refined_by: str | None = None
) -> ToolGraph:
    """Apply classified pairs to a graph: ``none`` removes an edge, others add or re-label it."""
    edges = {(e.src, e.dst): e for e in graph.edges}
    known = set(graph.tools)
    for item in pairs:
        if not isinstance(item, dict):
            continue
        src, dst, kind = item.get("from"), item.get("to"), item.get("kind")
        if src not in known or dst not in known or src == dst:
            continue
        reason = str(item.get("reason", ""))[:200]
        if kind == "none":
            edges.pop((src, dst), None)
        elif kind in ("explicit", "implicit"):
            old = edges.get((src, dst))
            via = old.via if old else ()
            params = old.params if old and kind == "explicit" else ()
            edges[(src, dst)] = Edge(src, dst, kind, via, params, "llm", reason)
    order = {t: i for i, t in enumerate(graph.tools)}
    ordered = sorted(edges.values(), key=lambda e: (order[e.src], order[e.dst]))
    return ToolGraph(
        server=graph.server,
        tools=graph.tools,
        edges=tuple(ordered),
        schema_hash=graph.schema_hash,
        writes=graph.writes,
        refined_by=refined_by,
    )
