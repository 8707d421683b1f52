"""Issue 22's repro on a CPU without AVX-512, emulated: which oneDNN kernels the layout fix avoids.

The development machines have AVX-512, and the crash of issue 22 (glibc heap corruption in the
channels_last convolution backward pass) only showed on a 2-core AMD EPYC with AVX2 and no
AVX-512. ``qemu-x86_64 -cpu <model>`` runs the same Python and torch on an emulated CPU that
reports only the model's instruction sets, so oneDNN dispatches the kernels it would pick on such
a CPU. This script runs the issue's minimal repro (``gpu_checks.REPRO22``) with and without the
fix, natively and under each emulated model, with ``ONEDNN_VERBOSE=1``, and records the exit
status, the signal if any, torch's CPU capability and every convolution primitive oneDNN ran
(implementation, direction, and whether its source is PyTorch's tensor as passed or a buffer
oneDNN reordered into; ``torch acdb`` is a channels_last tensor handed over by PyTorch, the path
of the crash). Emulation shows the dispatch, not the crash: whether the corruption appears depends on the
real CPU, so an exit status 0 here does not clear a real AVX2-only machine.

    python bench/avx2_emulated.py                   # native, EPYC-Rome, Haswell
    python bench/avx2_emulated.py --models EPYC-Rome
    python bench/avx2_emulated.py --render          # markdown from the last run's json

Writes bench/results/avx2_emulated.md and .json. Slow: each emulated run takes 1-2 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_checks import FIX22, REPRO22, _signal_name, cpu_info  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "results" / "avx2_emulated"
PROBE = "\nimport torch as _t\nprint('capability', _t.backends.cpu.get_cpu_capability())\n"


def conv_kernels(log: str) -> Counter:
    """(implementation, direction, source memory) of each convolution oneDNN executed.

    A verbose memory descriptor reads ``src:<dtype>:<flags>:blocked:<tag>:...``; flag ``a``
    means oneDNN chose the format itself (its own buffer, reordered from PyTorch's tensor),
    no flag means the memory is PyTorch's tensor as passed. Source memory is ``torch <tag>`` or
    ``onednn <tag>``; ``torch acdb`` is a channels_last tensor handed over by PyTorch."""
    seen: Counter = Counter()
    for line in log.splitlines():
        f = line.split(",")
        if len(f) > 8 and f[0] == "onednn_verbose" and f[3:6] == ["exec", "cpu", "convolution"]:
            src = next((p for p in f[8].split() if p.startswith("src:")), "")
            parts = src.split(":")
            memory = (f"{'onednn' if 'a' in parts[2] else 'torch'} {parts[4]}"
                      if len(parts) > 4 else "?")
            seen[(f[6], f[7], memory)] += 1
    return seen


def one_run(model: str | None, fixed: bool, timeout: float) -> dict[str, Any]:
    code = REPRO22.format(fix=FIX22 if fixed else "") + PROBE
    env = dict(os.environ, ONEDNN_VERBOSE="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")])))
    prefix = [] if model is None else ["qemu-x86_64", "-cpu", model]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([*prefix, sys.executable, "-c", code], env=env, cwd=REPO,
                              capture_output=True, text=True, timeout=timeout)
        rc, log, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, log, err = None, str(exc.stdout or ""), f"timed out after {timeout:.0f} s"
    seconds = time.perf_counter() - t0
    cap = next((ln.split()[1] for ln in log.splitlines() if ln.startswith("capability")), None)
    kernels = conv_kernels(log)
    return {
        "cpu": model or "native", "fix": fixed, "returncode": rc,
        "signal": None if rc is None else _signal_name(rc), "seconds": round(seconds, 1),
        "capability": cap,
        "kernels": [{"impl": k[0], "direction": k[1], "src_memory": k[2], "calls": n}
                    for k, n in sorted(kernels.items())],
        "channels_last_calls": sum(n for k, n in kernels.items() if k[2] == "torch acdb"),
        "stderr_tail": "\n".join(ln for ln in err.splitlines()
                                 if "TCG doesn't support" not in ln)[-800:],
    }


def markdown(runs: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        "# Issue 22 repro under an emulated CPU without AVX-512 (bench/avx2_emulated.py)",
        "",
        f"- host: {meta['host_cpu']} (avx512f {meta['host_avx512f']}), {meta['platform']}; "
        f"qemu: {meta['qemu']}; torch {meta['torch']}",
        f"- commit {meta['commit']}; date {meta['date']}",
        "- repro: issue 22's (resnet width 4 on 8x8x1, batch 64 permuted from NHWC, 20 Adam "
        "steps); `fix` = `.clone(memory_format=torch.contiguous_format)` after the permute, what "
        "`labelfree.zoo.preprocess.standard_nchw` does for every model input",
        "- kernels: every convolution primitive oneDNN executed (`ONEDNN_VERBOSE=1`) and its "
        "source memory: `torch <tag>` = PyTorch's tensor as passed, `onednn <tag>` = a buffer "
        "oneDNN chose and reordered into; tag `acdb` = channels_last, `abcd` = plain NCHW, "
        "`aBcd8b` = oneDNN's blocked layout",
        "- emulation shows which kernels a CPU without AVX-512 dispatches; it does not show the "
        "heap corruption, which depends on the real CPU (an exit status 0 here is not a pass "
        "on a real AVX2-only machine)",
        "",
        "| cpu | fix | exit | signal | torch capability | seconds | conv calls on PyTorch channels_last tensors | backward-data kernels |",
        "|---|---|---:|---|---|---:|---:|---|",
    ]
    for r in runs:
        bwd = ", ".join(f"{k['impl']} on {k['src_memory']} x{k['calls']}" for k in r["kernels"]
                        if k["direction"] == "backward_data")
        lines.append(f"| {r['cpu']} | {'with' if r['fix'] else 'without'} | {r['returncode']} | "
                     f"{r['signal'] or '—'} | {r['capability']} | {r['seconds']:.0f} | "
                     f"{r['channels_last_calls']} | {bwd or '—'} |")
    lines += ["", f"Verdict: {meta['verdict']}", ""]
    return "\n".join(lines)


def judge(runs: list[dict[str, Any]]) -> tuple[str, bool, bool, bool]:
    """The verdict line and its three findings: emulation hid AVX-512, the fix keeps PyTorch's
    channels_last tensors from oneDNN, the unfixed repro hands them over."""
    emulated = [r for r in runs if r["cpu"] != "native"]
    no512 = all(r["capability"] not in ("AVX512", None) for r in emulated)
    fixed_plain = all(r["channels_last_calls"] == 0 and r["returncode"] == 0
                      for r in runs if r["fix"])
    unfixed_cl = all(r["channels_last_calls"] > 0 for r in emulated if not r["fix"])
    verdict = (
        f"emulated CPUs report {sorted({str(r['capability']) for r in emulated})} to torch"
        f" ({'no AVX-512' if no512 else 'AVX-512 still seen: emulation not effective'}); "
        f"without the fix oneDNN {'receives' if unfixed_cl else 'does not receive'} PyTorch's "
        f"channels_last tensors there (the path of the crash); with the fix "
        f"{'no' if fixed_plain else 'some'} convolution does (oneDNN may still reorder into "
        f"layouts of its own choosing) and every run with it exits 0; aborts reproduced: "
        f"{sum(r['returncode'] not in (0, None) for r in runs if not r['fix'])}"
        f" of {sum(not r['fix'] for r in runs)} unfixed runs"
    )
    return verdict, no512, fixed_plain, unfixed_cl


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="*", default=["EPYC-Rome", "Haswell"],
                    help="qemu CPU models (qemu-x86_64 -cpu help)")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--render", action="store_true",
                    help="rewrite the markdown from the json of the last run (no run)")
    args = ap.parse_args()
    if args.render:
        data = json.loads(OUT.with_suffix(".json").read_text())
        data["meta"]["verdict"] = judge(data["runs"])[0]
        OUT.with_suffix(".md").write_text(markdown(data["runs"], data["meta"]))
        return
    if args.models and shutil.which("qemu-x86_64") is None:
        sys.exit("qemu-x86_64 not found (Debian: apt-get install qemu-user)")
    import torch

    qemu = (subprocess.run(["qemu-x86_64", "--version"], capture_output=True, text=True).stdout
            if args.models else "not used (this CPU only)")
    info = cpu_info()
    runs = [one_run(m, fixed, args.timeout) for m in [None, *args.models] for fixed in (False, True)]
    verdict, no512, fixed_plain, unfixed_cl = judge(runs)
    meta = {
        "host_cpu": info["cpu_model"], "host_avx512f": info["avx512f"],
        "platform": platform.platform(), "qemu": qemu.splitlines()[0] if qemu else "?",
        "torch": torch.__version__,
        "commit": subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                 capture_output=True, text=True).stdout.strip(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "verdict": verdict,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.with_suffix(".md").write_text(markdown(runs, meta))
    OUT.with_suffix(".json").write_text(json.dumps({
        "target": "issue 22: with the fix no convolution gets a PyTorch channels_last tensor on a CPU without AVX-512",
        "results": [
            {"what": "emulated CPUs without AVX-512", "value": ", ".join(args.models), "met": no512},
            {"what": "with the fix: convolutions on PyTorch channels_last tensors, exits",
             "value": "none, all 0" if fixed_plain else "some (see the table)", "met": fixed_plain},
            {"what": "without the fix on the emulated CPUs: convolutions on PyTorch channels_last tensors",
             "value": "yes" if unfixed_cl else "no", "target": False, "met": None},
            {"what": "aborts without the fix (emulation does not show the corruption)",
             "value": str(sum(r["returncode"] not in (0, None) for r in runs if not r["fix"])),
             "target": False, "met": None},
        ],
        "machine": {"cpu": info["cpu_model"], "commit": meta["commit"], "date": meta["date"]},
        "meta": meta, "models": args.models,
        "runs": runs,
    }, indent=1))
    print(OUT.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
