"""``prove graph`` and ``prove synth`` from the command line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from prove_gym.cli import main


def test_prove_graph_prints_the_edges_of_a_server(capsys) -> None:
    assert main(["graph", "calendar"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("calendar: 17 tools")
    assert "search_events" in out and "-> add_invitee" in out and "implicit" in out


def test_prove_graph_writes_dot_json_and_png(tmp_path: Path, capsys) -> None:
    dot, png = tmp_path / "cal.dot", tmp_path / "cal.png"
    assert main(["graph", "calendar", "--json", "--dot", str(dot), "--png", str(png)]) == 0
    out = capsys.readouterr().out
    data = json.loads(out[: out.rindex("}") + 1])
    assert data["server"] == "calendar" and data["counts"]["explicit"] > 0
    assert dot.read_text().startswith('digraph "calendar"')
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_prove_synth_writes_a_dataset_and_prints_the_report(tmp_path: Path, capsys) -> None:
    out = tmp_path / "data"
    args = ["synth", "--servers", "calendar", "--n", "5", "--out", str(out)]
    code = main([*args, "--state-seeds", "1", "--no-progress", "--distractor-rate", "0"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "5 tasks" in printed and "calendar" in printed
    report = json.loads((out / "report.json").read_text())
    assert report["totals"]["tasks"] == 5
    assert report["knobs"]["distractors"] == 0


def test_prove_synth_rejects_a_bad_range(capsys) -> None:
    try:
        main(["synth", "--out", "x", "--chain-length", "5-2"])
    except SystemExit as exc:
        assert exc.code == 2
    else:
        raise AssertionError("argparse accepted an empty range")


def test_prove_synth_ray_without_ray_installed_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` meets without Ray
    args = ["synth", "--servers", "calendar", "--n", "2", "--out", str(tmp_path), "--ray"]
    assert main([*args, "--no-progress"]) == 2
    assert "pip install 'prove-gym[ray]'" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
