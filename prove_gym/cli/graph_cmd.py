"""``prove-gym graph``: print a server's tool dependency graph; write DOT or PNG."""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "graph",
        help="show the tool dependency graph of a server (explicit and implicit edges)",
        description="Show the dependency graph that synthesis samples tool chains from. "
        "Explicit edges: a tool's result holds an identifier another tool takes. Implicit "
        "edges: a write changes what a later tool reads or writes.",
    )
    p.add_argument("server", help="server name, or 'all'")
    p.add_argument("--json", action="store_true", help="print the graph as JSON")
    p.add_argument("--dot", metavar="PATH", help="write Graphviz DOT to PATH")
    p.add_argument(
        "--png", metavar="PATH", help="draw a PNG (Graphviz 'dot' if installed, else matplotlib)"
    )
    p.add_argument("--llm-url", help="refine edges with an OpenAI-compatible endpoint (base URL)")
    p.add_argument("--llm-model", help="model name for --llm-url")
    p.add_argument("--llm-api-key", help="bearer token (default: $OPENAI_API_KEY)")
    p.add_argument("--cache-dir", help="LLM reply cache (default: ~/.cache/prove_gym)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from prove_gym import get_registry
    from prove_gym.synth.graph import build_graph, refine_graph
    from prove_gym.synth.llm import LLMClient

    registry = get_registry()
    names = list(registry.servers) if args.server == "all" else [args.server]
    if args.llm_url and not args.llm_model:
        raise ValueError("--llm-url needs --llm-model")
    client = (
        LLMClient(args.llm_url, args.llm_model, api_key=args.llm_api_key, cache_dir=args.cache_dir)
        if args.llm_url
        else None
    )
    graphs = []
    for name in names:
        server = registry.get_server(name)
        graph = build_graph(server)
        if client is not None:
            graph = refine_graph(server, client, graph, cache_dir=args.cache_dir)
        graphs.append(graph)
    if args.json:
        payload = [g.to_dict() for g in graphs]
        print(json.dumps(payload[0] if len(payload) == 1 else payload, indent=2))
    else:
        print("\n\n".join(g.to_text() for g in graphs))

    def target(name: str, server: str) -> Path:
        """``g.dot`` for one server; ``g-calendar.dot``, ``g-banking.dot`` ... for several."""
        path = Path(name)
        return path if len(graphs) == 1 else path.with_name(f"{path.stem}-{server}{path.suffix}")

    for graph in graphs:
        if args.dot:
            path = target(args.dot, graph.server)
            path.write_text(graph.to_dot(), encoding="utf-8")
            print(f"wrote {path}")
        if args.png:
            path = target(args.png, graph.server)
            try:
                how = graph.write_png(path)
            except RuntimeError as exc:
                print(f"prove graph: {exc}")
                return 1
            print(f"wrote {path} (drawn with {how})")
    return 0
