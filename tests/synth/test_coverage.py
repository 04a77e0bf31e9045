"""Every tool in the gold: identifiers grounded on an entity in the state the tool needs, or
on one that the calls planned right before it bring into that state (``Prepared``).

``food_delivery.assign_courier`` went unused at seed 0 (its draws took an order that could not
take a courier 29 times in 30, and none once the conversation's customer was fixed) and
``filesystem.rmdir`` at seed 2026 (a sampled tree has no empty folder). The 6-seed check at
1,000 tasks is ``benchmarks/bench_coverage.py`` (30 CPU-seconds a seed).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import prove_gym
from prove_gym.server import Prepared
from prove_gym.server.session import Session
from prove_gym.synth import SynthConfig, synthesize
from prove_gym.synth.chains import PlannedStep
from prove_gym.synth.grounding import Grounded, Grounder, entity_index
from prove_gym.synth.lint import Reader, misfit_identifier


def _grounder(server_name: str, rng: int, seed: int = 0) -> tuple[Any, Session, Grounder]:
    server = prove_gym.get_registry().get_server(server_name)
    session = server.session(seed, server.default_size)
    return server, session, Grounder(session, entity_index(session), random.Random(rng))


def _ground(grounder: Grounder, server: Any, tool: str, **kw: Any) -> Grounded:
    return grounder.ground(PlannedStep(server.tools[tool]), [], {}, **kw)


def _children(session: Session, folder: str) -> list[str]:
    result = session.call("ls", {"path": folder, "show_hidden": True})
    assert result.ok, result.message
    return [str(e) for e in result.content["entries"]]


@pytest.mark.parametrize("rng", range(4))
def test_rmdir_takes_a_folder_whose_only_file_is_deleted_first(rng: int) -> None:
    """A sampled tree has no empty folder: rmdir's source finds none (the draw failed, and
    ``rmdir`` was missing from the gold of whole runs), and with room for calls first it names
    a folder of one file of the user's and the ``rm`` that empties it; after it, rmdir fits
    that folder as it is and removes it."""
    server, session, grounder = _grounder("filesystem", rng)
    with session:
        assert _ground(grounder, server, "rmdir").unresolved == "path"
        g = _ground(grounder, server, "rmdir", prepare=True)
        assert g.unresolved is None and g.prepared is not None
        param, prepared = g.prepared
        assert param == "path" and isinstance(prepared, Prepared)
        folder = prepared.value
        assert g.args["path"] == folder
        ((tool, args),) = prepared.first
        assert tool == "rm" and args["path"].rsplit("/", 1)[0] == folder
        assert _children(session, folder) == [args["path"].rsplit("/", 1)[1]]
        assert session.call("rm", dict(args)).ok
        again = _ground(grounder, server, "rmdir")
        assert again.unresolved is None and again.args["path"] == folder
        removed = session.call("rmdir", again.args)
        assert removed.ok, removed.message


def _order(session: Session, order_id: str) -> dict[str, Any]:
    result = session.call("get_order", {"order_id": order_id})
    assert result.ok, result.message
    return dict(result.content)


@pytest.mark.parametrize("rng", range(6))
def test_assign_courier_takes_an_order_that_can_take_one(rng: int) -> None:
    """Of the orders a state lists, about 1 in 20 is accepted or preparing: the draws failed 29
    times in 30. The order is one that can take a courier (or a placed one the restaurant
    accepts first), the courier one available in its restaurant's zone, and the call works."""
    server, session, grounder = _grounder("food_delivery", rng)
    with session:
        g = _ground(grounder, server, "assign_courier", prepare=True)
        assert g.unresolved is None
        if g.prepared is not None:
            param, prepared = g.prepared
            assert param == "order_id" and _order(session, prepared.value)["status"] == "placed"
            assert prepared.first == (
                ("update_order_status", {"order_id": prepared.value, "new_status": "accepted"}),
            )
            assert session.call(*prepared.first[0]).ok
            g = _ground(grounder, server, "assign_courier", hints={"order_id": prepared.value})
            assert g.unresolved is None and g.prepared is None
        assert _order(session, g.args["order_id"])["status"] in ("accepted", "preparing")
        result = session.call("assign_courier", g.args)
        assert result.ok, result.message


def test_assign_courier_keeps_to_the_conversations_customer() -> None:
    """Once the conversation acts for a customer, only their orders are taken: one accepted
    at once when it is only placed, and none (the draw fails) when they have no order under
    way; no other customer's order stands in."""
    server, session, _ = _grounder("food_delivery", 0)
    with session:
        orders = session.list_entities("order")
        zone = {r["restaurant_id"]: r["zone"] for r in session.list_entities("restaurant")}
        free = session.call("list_couriers", {"status": "available", "limit": 50})
    served = {c["zone"] for c in free.content["couriers"]}
    placed = next(
        r for r in orders if r["status"] == "placed" and zone[r["restaurant_id"]] in served
    )
    idle = {r["customer_id"] for r in orders} - {
        r["customer_id"] for r in orders if r["status"] in ("placed", "accepted", "preparing")
    }
    for customer, expected in ((placed["customer_id"], placed["order_id"]), (min(idle), None)):
        for rng in range(4):
            _, session, grounder = _grounder("food_delivery", rng)
            with session:
                grounder.persona["customer"] = customer
                g = _ground(grounder, server, "assign_courier", prepare=True)
                if expected is None:
                    assert g.unresolved == "order_id"
                    continue
                assert g.prepared is not None and g.prepared[1].value == expected


def test_place_order_takes_a_customer_with_a_cart_or_fills_the_cart_first() -> None:
    """place_order failed on an empty cart three times in four once the conversation had a
    customer (a lookup that found one). A customer with an empty cart adds an item first."""
    server, session, _ = _grounder("food_delivery", 0)
    with session:
        customers = session.list_entities("customer")
    with_cart = {r["customer_id"] for r in customers if r["cart_line_ids"]}
    empty = min(r["customer_id"] for r in customers if not r["cart_line_ids"])
    for rng in range(4):
        _, session, grounder = _grounder("food_delivery", rng)
        with session:
            g = _ground(grounder, server, "place_order", prepare=True)
            assert g.prepared is None and g.args["customer_id"] in with_cart
            grounder.persona["customer"] = empty
            g = _ground(grounder, server, "place_order", prepare=True)
            assert g.prepared == (
                "customer_id",
                Prepared(empty, (("add_to_cart", {"customer_id": empty}),)),
            )
            assert _ground(grounder, server, "place_order").unresolved == "customer_id"


def test_synthesis_empties_a_folder_then_removes_it_and_lint_holds_it_to_that() -> None:
    """The file system's gold removes folders (none at seed 2026 with ``prove_gym.synth/13``),
    each right after the call that deleted its only file, in the same request; the
    ``misfit_identifier`` class passes such a task and flags it without that call."""
    result = synthesize(SynthConfig(servers=("filesystem",), n=50, seed=2026))
    reader = Reader()
    chains = 0
    for task in result.tasks:
        for turn in task.turns:
            names = [s.name for s in turn.steps]
            for i, step in enumerate(turn.steps):
                if step.name != "rmdir" or i == 0 or names[i - 1] != "rm":
                    continue
                deleted = str(turn.steps[i - 1].arguments["path"])
                assert deleted.rsplit("/", 1)[0] == step.arguments["path"]
                chains += 1
                data = json.loads(task.to_json())
                assert misfit_identifier(reader.read(data)) == []
                for t in data["turns"]:
                    t["steps"] = [s for s in t["steps"] if s["id"] != turn.steps[i - 1].id]
                assert misfit_identifier(reader.read(data)), "rmdir of a folder still full"
    assert chains >= 1


@pytest.mark.slow
def test_prepared_calls_are_the_same_bytes_across_hash_seeds_and_workers(tmp_path: Path) -> None:
    """The calls a source plans first come from the state and the conversation's random
    stream alone: fresh processes with other ``PYTHONHASHSEED`` values and worker counts
    write the same files, in which a folder is emptied and removed and an order accepted
    and given a courier."""
    args = ["synth", "--servers", "filesystem,food_delivery", "--n", "100", "--seed", "2026"]
    args += ["--no-progress"]
    runs = {"h0": ("0", "1"), "h1w2": ("1", "2"), "hrandom": ("random", "1")}
    for name, (hash_seed, workers) in runs.items():
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "prove_gym",
                *args,
                "--workers",
                workers,
                "--out",
                str(tmp_path / name),
            ],
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, done.stderr[-2000:]
    first, *rest = (
        {p.name: p.read_bytes() for p in sorted((tmp_path / name).iterdir())} for name in runs
    )
    assert all(other == first for other in rest)
    gold = [
        [s["name"] for turn in json.loads(line)["turns"] for s in turn["steps"]]
        for split in ("train.jsonl", "test.jsonl")
        for line in first[split].decode().splitlines()
    ]
    assert any("rmdir" in g and "rm" in g[: g.index("rmdir")] for g in gold)
    assert any(
        "assign_courier" in g and "update_order_status" in g[: g.index("assign_courier")]
        for g in gold
    )
