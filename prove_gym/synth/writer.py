"""The writer of user turns: the template text (the default) or an LLM's rewrite of it.

``prove-gym synth --writer llm --llm-url URL --llm-model NAME`` sends each planned user
turn the renderer wrote (:class:`~prove_gym.synth.render.RenderedTurn`) to any
OpenAI-compatible chat-completions endpoint (vLLM, Ollama, a hosted API) and asks for
the same request as a person would write it. A rewrite is kept only if the checker
finds nothing wrong with it (:meth:`LLMWriter.check`):

- every value the gold needs that the turn states is still there, character for
  character (``dropped_value``), and a clarify turn does not state the value it
  leaves out (``withheld_value``);
- nothing is added: no identifier, number, e-mail, path or quoted string that the
  template text does not hold (``added_value``);
- it reads clean and passes the text and gold check and every lint class that the
  template text passes (``text_check:<kind>``, ``lint:<class>``), with the turn
  replaced in the whole task;
- the reply is a JSON object ``{"text": ...}`` (``bad_reply``), not empty and not far
  longer than the template (``empty``, ``too_long``), and it came at all
  (``transport``: a timeout, a refused connection, an HTTP error).

A rejected rewrite falls back to the template text; the counts of both, by reason, go
to the report (``writer`` in ``report.json``). Replies are cached on disk by a hash of
the whole request (:class:`~prove_gym.synth.llm.LLMClient`), so a rerun sends nothing
and writes the same bytes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

from prove_gym.synth.llm import LLMClient, LLMError, extract_json
from prove_gym.synth.render import RenderedTurn
from prove_gym.task import Task

WRITERS = ("template", "llm")
"""The values of ``--writer``."""

SYSTEM = (
    "You rewrite one message that a user sends to an assistant so that it reads as a real "
    "person would write it: natural, varied, plain. Keep the meaning and every request in "
    "it, in the same order. Copy each string listed under KEEP exactly as written (same "
    "characters). Do not add requests, names, numbers, ids or any other detail, and do not "
    "answer the message. Greet only if the message is marked FIRST. Reply with a JSON "
    'object only: {"text": "<the rewritten message>"}.'
)
"""The system prompt of a rewrite request."""

MAX_GROWTH = 3
"""A rewrite longer than ``MAX_GROWTH`` times the template (plus :data:`SLACK` characters)
is rejected (``too_long``)."""
SLACK = 200

_VALUE_TOKEN = re.compile(
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # an e-mail address
    r"|(?:[\w.-]*/)+[\w.-]+"  # a path
    r"|[A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)+"  # an identifier: evt_0042, SKU-12
    r"|[$€£]?\d[\d,.:]*%?"  # a number, an amount, a time
    r"|\"[^\"\n]{1,200}\"",  # a quoted string
)
"""What a user turn states as a value: a rewrite may hold only those of its template."""


def value_tokens(text: str) -> list[str]:
    """The value-like tokens of ``text``, each once, in order.

    >>> value_tokens('Move evt_0042 to 5:30 pm and mail bo@x.org "Q3 plan".')
    ['evt_0042', '5:30', 'bo@x.org', '"Q3 plan"']
    """
    out: list[str] = []
    for m in _VALUE_TOKEN.finditer(text):
        token = m.group(0).rstrip(".,:")
        if token and token not in out:
            out.append(token)
    return out


def request_messages(rendered: RenderedTurn, *, first: bool) -> list[dict[str, str]]:
    """The chat messages that ask for a rewrite of one user turn."""
    keep = "\n".join(rendered.keep) or "(nothing)"
    where = "FIRST" if first else "LATER"
    content = f"MESSAGE ({where}):\n{rendered.text}\n\nKEEP:\n{keep}"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": content}]


TaskCheck = Callable[[Task], "set[str]"]
"""What a task's text fails: ``text_check:<kind>`` and ``lint:<class>`` findings."""


class LLMWriter:
    """Rewrites the planned user turns of a task through an OpenAI-compatible endpoint.

    Args:
        client: The endpoint (its replies cached on disk).
        max_tokens: Sent as ``max_tokens`` (a bound on each reply's cost).
    """

    def __init__(self, client: LLMClient, *, max_tokens: int = 512) -> None:
        self.client = client
        self.max_tokens = max_tokens

    def rewrite(self, rendered: RenderedTurn, *, first: bool) -> tuple[str | None, str | None]:
        """``(text, None)`` with the endpoint's rewrite, or ``(None, reason)``."""
        try:
            reply = self.client.complete(
                request_messages(rendered, first=first),
                json_mode=True,
                max_tokens=self.max_tokens,
            )
        except LLMError:
            return None, "transport"
        if len(reply) > MAX_GROWTH * (len(rendered.text) + SLACK) + SLACK:
            return None, "too_long"  # before parsing it: hostile sizes cost nothing more
        try:
            data = extract_json(reply)
        except LLMError:
            return None, "bad_reply"
        text = data.get("text") if isinstance(data, dict) else None
        if not isinstance(text, str):
            return None, "bad_reply"
        return " ".join(text.split()), None

    @staticmethod
    def check(rewrite: str, rendered: RenderedTurn, withheld: Sequence[str] = ()) -> str | None:
        """Why ``rewrite`` cannot stand for the template turn ``rendered`` on its own
        (the task-wide checks come after), or None.

        >>> turn = RenderedTurn("Cancel evt_0042 please.", ["evt_0042"])
        >>> LLMWriter.check("Could you cancel evt_0042?", turn) is None
        True
        >>> LLMWriter.check("Cancel my meeting.", turn), LLMWriter.check("Cancel evt_0042 and evt_7.", turn)
        ('dropped_value', 'added_value')
        """
        if not rewrite:
            return "empty"
        if len(rewrite) > MAX_GROWTH * len(rendered.text) + SLACK:
            return "too_long"
        if any(value not in rewrite for value in rendered.keep):
            return "dropped_value"
        lowered, known = rewrite.casefold(), rendered.text.casefold()
        if any(v.casefold() in lowered and v.casefold() not in known for v in withheld if v):
            return "withheld_value"
        if any(token.casefold() not in known for token in value_tokens(rewrite)):
            return "added_value"
        return None

    def write(
        self,
        task: Task,
        rendered: Sequence[RenderedTurn | None],
        task_check: TaskCheck,
        withheld: Sequence[str] = (),
    ) -> tuple[Task, Counter[str]]:
        """``task`` with each planned turn (``rendered[t]`` not None) rewritten where the
        rewrite passes every check, and the counts (``accepted``, ``rejected:<reason>``).

        Args:
            task: The task with the template text.
            rendered: Per turn of ``task``, what the renderer planned (None: a turn that
                is not a planned request, such as the answer to a clarify question).
            task_check: The findings of the task-wide checks on a task; a rewrite may
                not add any to the template's.
            withheld: What a ``clarify`` turn leaves out on purpose.
        """
        counts: Counter[str] = Counter()
        baseline = task_check(task)
        for t, rt in enumerate(rendered):
            if rt is None:
                continue
            rt = RenderedTurn(task.turns[t].user, rt.keep)  # an opener may have moved in
            text, reason = self.rewrite(rt, first=t == 0)
            if text is not None:
                clarify = task.turns[t].kind == "clarify"
                reason = self.check(text, rt, withheld if clarify else ())
            if text is not None and reason is None:
                turns = list(task.turns)
                turns[t] = turns[t].model_copy(update={"user": text})
                trial = task.model_copy(update={"turns": turns})
                new = sorted(task_check(trial) - baseline)
                if new:
                    reason = new[0]
                else:
                    task = trial
            counts["accepted" if reason is None else f"rejected:{reason}"] += 1
        return task, counts
