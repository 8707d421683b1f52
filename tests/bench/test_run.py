"""bench/run.py reads each benchmark's results file (issue 19 item 5): values and met / not met.

Each case is a fragment in the format its benchmark script writes (see the scripts in bench/);
the expected values are read off the fragment by hand.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def run():
    spec = importlib.util.spec_from_file_location("bench_run", REPO / "bench" / "run.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules["bench_run"]


def test_json_results_need_every_result_met(run):
    data = {"results": [{"what": "a", "value": 0.95, "met": True},
                        {"what": "b", "value": 0.5, "case": "mlp", "met": False}]}
    got = run.parse_json_results(json.dumps(data))
    assert got.met is False and "b: 0.5 (mlp)" in got.value
    data["results"][1]["met"] = True
    assert run.parse_json_results(json.dumps(data)).met is True


def test_target_lines(run):
    text = "x\n- budget 50: identical **yes**; target <= 5 s: NOT met\n- budget 180: target <= 5 s: met\n"
    got = run.parse_target_lines(text)
    assert got.met is False and got.value.count("target") == 2
    assert run.parse_target_lines("- target (issue 19 item 4): < 10 s; measured 8.3 s (met)").met
    assert run.parse_target_lines("no such line").met is None


def test_laf_study_stream_peak_and_loading(run):
    head = "| size | sets | code | wall s | peak RSS MB | load s | methods s | rest s | same |\n|---|---|---|---|---|---|---|---|---|\n"
    ok = head + "| 20x100000x1000 | id | streamed | 371.8 | 1170 | 53.3 | 54.5 | 263.9 | — |\n"
    got = run.parse_laf_study_stream(ok)
    assert got.met is True and "peak 1170 MB" in got.value
    assert run.parse_laf_study_stream(ok.replace("| 1170 |", "| 2100 |")).met is False  # > 2 GB
    assert run.parse_laf_study_stream(ok.replace("| 53.3 |", "| 60.0 |")).met is False  # load > methods


def test_graph_cost_limits_per_case(run):
    head = "| case | layout | wall s | CPU s | peak RSS MB | load avg | rc |\n|---|---|---|---|---|---|---|\n"
    rows = ("| default | baseline | 13.6 | 9.0 | 925 | 2.9 | 0 |\n"
            "| default | this tree | 4.2 | 3.0 | 905 | 3.5 | 0 |\n"
            "| zoo10k | this tree | 59.0 | 40.0 | 1599 | 6.2 | 0 |\n")
    got = run.parse_graph_cost(head + rows)
    assert got.met is True and "default 4.2 s" in got.value and "baseline" not in got.value
    assert run.parse_graph_cost(head + rows.replace("| 1599 |", "| 2100 |")).met is False  # 2 GB
    assert run.parse_graph_cost(head + rows.replace("| 4.2 |", "| 5.5 |")).met is False


def test_methods_scorecard_lists_the_slow_ones(run):
    # the verdicts bench/methods_scorecard.py writes: "yes", "yes (cpu)", "no: <cause>";
    # baseline rows are no methods
    head = "| kind | method | wall s | cpu s | load | verdict |\n|---|---|---:|---:|---:|---|\n"
    text = head + ("| rank | LaF | 1.677 | 1.087 | 4.0 | yes |\n"
                   "| rank | MaNo | 2.500 | 1.500 | 6.0 | yes (cpu) |\n"
                   "| rank | FD | 32.137 | 21.004 | 4.5 | no: two D x D eigendecompositions |\n"
                   "| baseline | COT solver=emd, models 0-1 | 9.000 | 8.000 | 4.0 | baseline |\n")
    got = run.parse_methods_scorecard(text)
    assert got.met is False and "2 of 3" in got.value and "FD 32.1 s wall / 21.0 s cpu (5.3x a 2-core" in got.value
    assert "1 of them on CPU time only" in got.value and "COT" not in got.value
    ok = head + "| rank | LaF | 1.677 | 1.087 | 4.0 | yes |\n"
    assert run.parse_methods_scorecard(ok).met is True


def test_laf_rank_log(run):
    line_a = "a      10000  30    10     0.40       50      1.0     9.00       60    22.5x     True    12"
    line_b = "b     100000  20  1000    12.00     1500     20.0   300.00     3000    25.0x     True    20"
    got = run.parse_laf_rank(line_a + "\n" + line_b)
    assert got.met is True and "(b) 12.00 s" in got.value
    assert run.parse_laf_rank(line_a.replace("22.5x", "6.5x") + "\n" + line_b).met is False


def test_index_has_one_row_per_benchmark(run, tmp_path, monkeypatch):
    monkeypatch.setattr(run, "INDEX", tmp_path / "results.md")
    monkeypatch.setattr(run, "README", tmp_path / "README.md")
    (tmp_path / "README.md").write_text(f"intro\n{run.README_BEGIN}\nold\n{run.README_END}\nrest\n")
    run.write_index({"inference_vs_bare": 0, "laf_rank": 2})
    rows = [ln for ln in (tmp_path / "results.md").read_text().splitlines() if ln.startswith("| `")]
    assert [r.split("`")[1] for r in rows] == [b.name for b in run.BENCHES]
    assert "failed (exit 2)" in next(r for r in rows if "`laf_rank`" in r)
    assert next(r for r in rows if "`inference_vs_bare`" in r).endswith("| ran |")


def test_readme_block_states_each_measured_benchmark_from_its_file(run, tmp_path, monkeypatch):
    """README's speed block is rewritten from the results files: every benchmark with a results
    file gets one line with its met/not-met verdict; the text around the markers is kept."""
    monkeypatch.setattr(run, "README", tmp_path / "README.md")
    (tmp_path / "README.md").write_text(f"intro\n{run.README_BEGIN}\ntyped 1.0 s\n{run.README_END}\nrest\n")
    run.write_readme_block()
    text = (tmp_path / "README.md").read_text()
    block = text.split(run.README_BEGIN)[1].split(run.README_END)[0]
    assert text.startswith("intro\n") and text.endswith("rest\n") and "typed 1.0 s" not in block
    measured = [b for b in run.BENCHES if run.entry(b)[1] != "—" or not run.entry(b)[0].startswith("not measured")]
    for b in measured:
        verdict = run.entry(b)[1].strip("*")
        assert f"- `{b.name}`, target met: {verdict}." in block
