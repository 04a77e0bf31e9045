"""Shared fixtures: one dataset synthesized per test session over every installed server,
and a tiny OpenAI-compatible HTTP server on 127.0.0.1 for the optional LLM steps."""

from __future__ import annotations

import pickle
from collections.abc import Iterator

import pytest

from prove_gym.synth import SynthConfig, SynthResult, synthesize
from prove_gym.testing.llm_stub import StubChat

PER_SERVER = 50


@pytest.fixture(scope="session")
def synth_config() -> SynthConfig:
    import prove_gym

    n = PER_SERVER * len(prove_gym.get_registry().servers)
    return SynthConfig(servers=("all",), n=n, seed=11, state_seeds=2)


@pytest.fixture(scope="session")
def dataset(
    synth_config: SynthConfig, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> SynthResult:
    """Synthesized once per test run: the first xdist worker to need it writes it where the
    others read it (the run is deterministic, so each would compute the same result)."""
    if worker_id == "master":  # not under xdist
        return synthesize(synth_config)
    from filelock import FileLock

    path = tmp_path_factory.getbasetemp().parent / "synth-dataset.pickle"
    with FileLock(f"{path}.lock"):
        if path.is_file():
            loaded: SynthResult = pickle.loads(path.read_bytes())
            return loaded
        result = synthesize(synth_config)
        path.write_bytes(pickle.dumps(result))
        return result


@pytest.fixture
def fake_llm() -> Iterator[StubChat]:
    """A chat-completions endpoint on 127.0.0.1 that answers with ``fake_llm.reply(request)``."""
    with StubChat() as stub:
        yield stub
