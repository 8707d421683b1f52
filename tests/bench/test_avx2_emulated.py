"""bench/avx2_emulated.py reads oneDNN's verbose lines (issue 22): which convolutions got a
PyTorch channels_last tensor. The lines are copied from a run of the issue's repro under
``qemu-x86_64 -cpu EPYC-Rome`` (without and with the layout fix); the expected tuples are read
off them by hand: no flag before ``blocked`` = PyTorch's tensor, flag ``a`` = oneDNN's choice."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

UNFIXED = (
    "onednn_verbose,v1,primitive,exec,cpu,convolution,brg_conv_bwd:avx2+brg_conv_fwd:avx2,"
    "backward_data,src:f32::blocked:acdb::f0 wei:f32:a:blocked:Acdb8a::f0 bia:undef::undef::: "
    "dst:f32::blocked:acdb::f0,attr-scratchpad:user,alg:convolution_direct,"
    "mb64_ic4oc4_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1,61.38"
)
FIXED = (
    "onednn_verbose,v1,primitive,exec,cpu,convolution,jit:avx2,backward_data,"
    "src:f32:a:blocked:aBcd8b::f0 wei:f32:a:blocked:ABcd8a8b::f0 bia:undef::undef::: "
    "dst:f32:a:blocked:aBcd8b::f0,attr-scratchpad:user,alg:convolution_direct,"
    "mb64_ic16oc16_ih2oh2kh3sh1dh0ph1_iw2ow2kw3sw1dw0pw1,87.90"
)
REORDER = ("onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,"
           "src:f32::blocked:abcd::f0 dst:f32::blocked:acdb::f0,,,64x1x8x8,0.01")


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(REPO / "bench"))
    try:
        spec = importlib.util.spec_from_file_location("avx2_emulated", REPO / "bench" / "avx2_emulated.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(REPO / "bench"))


def test_kernels_tell_pytorch_channels_last_from_onednn_layouts(bench):
    got = bench.conv_kernels("\n".join([UNFIXED, UNFIXED, FIXED, REORDER, "strides ... ok"]))
    assert got == {
        ("brg_conv_bwd:avx2+brg_conv_fwd:avx2", "backward_data", "torch acdb"): 2,
        ("jit:avx2", "backward_data", "onednn aBcd8b"): 1,
    }


def test_verdict_needs_the_fixed_runs_free_of_channels_last_tensors(bench):
    def run(cpu, fix, cl, rc=0):
        return {"cpu": cpu, "fix": fix, "channels_last_calls": cl, "returncode": rc,
                "capability": "AVX512" if cpu == "native" else "AVX2"}

    ok = [run("native", False, 520), run("native", True, 0),
          run("EPYC-Rome", False, 520), run("EPYC-Rome", True, 0)]
    verdict, no512, fixed_plain, unfixed_cl = bench.judge(ok)
    assert no512 and fixed_plain and unfixed_cl and "0 of 2 unfixed runs" in verdict
    _, _, fixed_plain, _ = bench.judge([*ok[:3], run("EPYC-Rome", True, 20)])
    assert not fixed_plain
    _, _, _, unfixed_cl = bench.judge([*ok[:2], run("EPYC-Rome", False, 0), ok[3]])
    assert not unfixed_cl
