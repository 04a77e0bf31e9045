"""State-grounded data synthesis: validated multi-turn tool-use conversations.

Pipeline (docs/paper.md, section 2): a dependency graph per server from the tools'
declarations (:mod:`~prove_gym.synth.graph`), topology-aware chain sampling
(:mod:`~prove_gym.synth.chains`), arguments grounded in live state
(:mod:`~prove_gym.synth.grounding`), execution with retries and repairs,
user turns rendered from phrasings (:mod:`~prove_gym.synth.render`), replay
validation and near-duplicate removal (:mod:`~prove_gym.synth.validate`), and
writers for trainers (:mod:`~prove_gym.synth.export`). No LLM is needed; one
can rewrite the user turns (:mod:`~prove_gym.synth.writer`, each rewrite checked
against the gold) and refine the graph, through :mod:`~prove_gym.synth.llm`.

>>> from prove_gym.synth import SynthConfig, synthesize, write_dataset
>>> result = synthesize(SynthConfig(servers=("calendar",), n=20))  # doctest: +SKIP
>>> write_dataset(result, "data/")  # doctest: +SKIP

See ``docs/synthesis.md`` for the knobs and the output formats.

Each name is imported from its module on first use (PEP 562): the command line reads
:class:`SynthConfig`'s defaults for ``synth``'s options without importing the pipeline.
"""

from typing import TYPE_CHECKING

from prove_gym._lazy import lazy_names

if TYPE_CHECKING:
    from prove_gym.synth.config import SynthConfig
    from prove_gym.synth.export import build_report, format_report, write_dataset
    from prove_gym.synth.graph import Edge, ToolGraph, build_graph, refine_graph
    from prove_gym.synth.llm import LLMClient, LLMError
    from prove_gym.synth.pipeline import SynthResult, synthesize

_LAZY: dict[str, str] = {
    "Edge": "prove_gym.synth.graph",
    "LLMClient": "prove_gym.synth.llm",
    "LLMError": "prove_gym.synth.llm",
    "SynthConfig": "prove_gym.synth.config",
    "SynthResult": "prove_gym.synth.pipeline",
    "ToolGraph": "prove_gym.synth.graph",
    "build_graph": "prove_gym.synth.graph",
    "build_report": "prove_gym.synth.export",
    "format_report": "prove_gym.synth.export",
    "refine_graph": "prove_gym.synth.graph",
    "synthesize": "prove_gym.synth.pipeline",
    "write_dataset": "prove_gym.synth.export",
}

__all__ = [
    "Edge",
    "LLMClient",
    "LLMError",
    "SynthConfig",
    "SynthResult",
    "ToolGraph",
    "build_graph",
    "build_report",
    "format_report",
    "refine_graph",
    "synthesize",
    "write_dataset",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)
