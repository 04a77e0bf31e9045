"""What the LLM writer (``--writer llm``) costs per 1,000 tasks, against the stand-in endpoint.

A real HTTP endpoint on 127.0.0.1 (:class:`~prove_gym.testing.llm_stub.StubChat`)
answers every rewrite request (:func:`~prove_gym.testing.llm_stub.rewriting_reply`: good
rewrites mixed with hostile ones), so no model runs: what is measured is what a model
would be sent and asked for.

- requests per 1,000 tasks: one per planned user turn of a kept task (a candidate
  dropped before the writer sends none; a cached reply is no request);
- prompt and reply characters per 1,000 tasks, and tokens estimated at four
  characters a token (English text; a model's tokenizer gives its own count), the
  reply side taken as what a model would answer: the stub's good rewrites;
- the writer's checks: rewrites accepted and rejected by reason;
- wall time of the run beside the same run with the template writer, in this process.

Run: ``python benchmarks/bench_writer.py [--n 1000] [--seed 3]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

from prove_gym.synth import SynthConfig, build_report, synthesize
from prove_gym.testing.llm_stub import StubChat, rewriting_reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    base = SynthConfig(servers=("all",), n=args.n, seed=args.seed)
    started = time.perf_counter()
    plain = synthesize(base)
    template_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as cache, StubChat(rewriting_reply) as stub:
        cfg = SynthConfig(
            servers=("all",),
            n=args.n,
            seed=args.seed,
            writer="llm",
            llm_url=stub.url,
            llm_model="stub",
            cache_dir=cache,
        )
        started = time.perf_counter()
        result = synthesize(cfg)
        llm_s = time.perf_counter() - started
        prompt = sum(len(m["content"]) for p in stub.requests for m in p["messages"])
        reply = sum(
            len(json.dumps({"text": json.loads(str(rewriting_reply(p, kinds=("good",))))["text"]}))
            for p in stub.requests
        )
        requests = len(stub.requests)
    per = 1000 / len(result.tasks)
    writer = build_report(result)["writer"]
    print(f"{len(result.tasks)} tasks over {len(result.servers)} servers, seed {args.seed}")
    print(f"requests per 1,000 tasks: {requests * per:.0f}")
    print(
        f"prompt characters per 1,000 tasks: {prompt * per:,.0f} (~{prompt * per / 4:,.0f} tokens)"
    )
    print(f"reply characters per 1,000 tasks: {reply * per:,.0f} (~{reply * per / 4:,.0f} tokens)")
    print(
        f"per request: ~{prompt / requests / 4:.0f} prompt + ~{reply / requests / 4:.0f} reply tokens"
    )
    print(f"writer: {json.dumps(writer, sort_keys=True)}")
    print(
        f"wall time: template {template_s:.1f} s, llm writer on the stub {llm_s:.1f} s "
        f"({llm_s / template_s:.2f}x)"
    )
    same = [[[(s.name, s.arguments) for s in t.steps] for t in x.turns] for x in plain.tasks]
    assert same == [
        [[(s.name, s.arguments) for s in t.steps] for t in x.turns] for x in result.tasks
    ]
    print("same gold calls as the template run: yes")


if __name__ == "__main__":
    main()
