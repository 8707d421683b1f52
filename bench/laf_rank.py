"""Benchmark of LaF's ``rank`` against a straightforward per-class loop implementation.

Issue 3, Performance: (a) 10,000 inputs x 30 models x 10 classes, (b) 100,000 x 20 x 1,000.
The baseline below (written here, not shipped) follows the reference code: the E-step loops over
all K classes and keeps the (m, K) posterior, Q and its gradient are evaluated elementwise with
``log_expit``; pruning, initialisation, CG M-step and stopping rule are the same as ``rank``.

    python bench/laf_rank.py            # both problems
    python bench/laf_rank.py --only a   # one problem

Prints wall time, peak traced memory (tracemalloc: NumPy buffers included), speedup and whether
the two rankings are identical.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np
from scipy import optimize
from scipy.special import log_expit

from labelfree.laf.core import e_step, group_labels, q_value, rank, ranks_descending


def glad_problem(m: int, n: int, K: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Predictions of n models with accuracies U(0.55, 0.95), errors uniform over wrong classes."""
    r = np.random.default_rng(seed)
    acc = r.uniform(0.55, 0.95, n)
    y = r.integers(0, K, m)
    right = r.random((m, n)) < acc
    wrong = (y[:, None] + r.integers(1, K, (m, n))) % K
    return np.where(right, y[:, None], wrong).astype(np.int32), acc


def loop_rank(Yhat: np.ndarray, K: int) -> np.ndarray:
    """Per-class loop LaF (reference-code structure); returns the fitted scores."""
    Y = Yhat[(Yhat != Yhat[:, :1]).any(axis=1)].astype(np.int64)
    m, n = Y.shape
    counts = np.zeros((m, K), dtype=np.int32)
    for k in range(K):
        counts[:, k] = (k == Y).sum(axis=1)
    vote = counts.argmax(axis=1)
    agree = vote[:, None] == Y
    a0, b0 = agree.mean(axis=0), agree.mean(axis=1)
    L = np.log(K - 1.0)

    def e_step(a, b):
        x = np.outer(np.exp(b), a)
        ls, l1s = log_expit(x), log_expit(-x) - L
        logp = np.empty((m, K))
        for k in range(K):  # one pass over the whole matrix per class
            logp[:, k] = np.where(k == Y, ls, l1s).sum(axis=1)
        logp -= logp.max(axis=1, keepdims=True)
        post = np.exp(logp)
        post /= post.sum(axis=1, keepdims=True)
        return np.take_along_axis(post, Y, axis=1)

    def q_and_grad(theta, pi):
        a, b = theta[:n], theta[n:]
        eb = np.exp(b)
        x = np.outer(eb, a)
        ls, l1s = log_expit(x), log_expit(-x)
        q = m * np.log(1.0 / K) + (pi * ls + (1 - pi) * (l1s - L)).sum()
        q += -0.5 * (((a - a0) ** 2).sum() + ((b - b0) ** 2).sum())
        q += -0.5 * np.log(2 * np.pi) * (n + m)
        r = pi - np.exp(ls)
        ga = eb @ r - (a - a0)
        gb = eb * (r @ a) - (b - b0)
        return -q, -np.concatenate([ga, gb])

    def m_step(theta, pi):
        res = optimize.minimize(
            q_and_grad, theta, args=(pi,), jac=True, method="CG", tol=0.01, options={"maxiter": 25}
        )
        return res.x

    theta = np.concatenate([a0, b0])
    pi = e_step(theta[:n], theta[n:])
    q_last = -q_and_grad(theta, pi)[0]
    theta = m_step(theta, pi)
    q_cur = -q_and_grad(theta, pi)[0]
    it = 1
    while abs((q_cur - q_last) / q_last) > 1e-5 and it < 1000:
        q_last = q_cur
        pi = e_step(theta[:n], theta[n:])
        theta = m_step(theta, pi)
        q_cur = -q_and_grad(theta, pi)[0]
        it += 1
    return theta[:n]


def reference_e_step_q(Y: np.ndarray, a: np.ndarray, b: np.ndarray, K: int, a0, b0) -> tuple:
    """Reference-code style: ``apply_along_axis`` over inputs, a Python loop over the K classes
    inside, posterior (m, K) materialised; then Q from it (spec sections 2.5 and 2.9)."""
    L = np.log(K - 1.0)
    eb = np.exp(b)

    def row_posterior(row_and_eb):
        row, e = row_and_eb[:-1].astype(np.int64), row_and_eb[-1]
        x = a * e
        ls, l1s = log_expit(x), log_expit(-x) - L
        logp = np.empty(K)
        for k in range(K):
            logp[k] = np.where(row == k, ls, l1s).sum()
        logp -= logp.max()
        p = np.exp(logp)
        return p / p.sum()

    post = np.apply_along_axis(row_posterior, 1, np.column_stack([Y, eb]))
    pi = np.take_along_axis(post, Y, axis=1)
    x = np.outer(eb, a)
    q = Y.shape[0] * np.log(1.0 / K)
    q += (pi * log_expit(x) + (1 - pi) * (log_expit(-x) - L)).sum()
    q += -0.5 * (((a - a0) ** 2).sum() + ((b - b0) ** 2).sum())
    q += -0.5 * np.log(2 * np.pi) * (a.size + b.size)
    return pi, q


def vector_e_step_q(Y, a, b, K, a0, b0):
    groups = group_labels(Y)
    pi, _ = e_step(a, b, groups, K)
    return pi, q_value(a, b, pi, a0, b0, K)


def measure(fn, *args):
    tracemalloc.start()
    t0 = time.perf_counter()
    out = fn(*args)
    wall = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, wall, peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["a", "b"], default=None)
    parser.add_argument("--ref-rows", type=int, default=2000, help="rows timed reference-style")
    args = parser.parse_args()
    problems = {"a": (10_000, 30, 10), "b": (100_000, 20, 1_000)}
    targets = {"a": 1.0, "b": 20.0}
    print("full rank(): vectorised vs per-class loop (rows vectorised, same CG M-step)")
    print(
        f"{'case':4} {'m':>7} {'n':>3} {'K':>5} {'rank s':>8} {'peak MB':>8} {'target s':>8} "
        f"{'loop s':>8} {'loop MB':>8} {'speedup':>8} {'ranks ==':>8} {'EM it':>5}"
    )
    estep_rows = []
    for key, (m, n, K) in problems.items():
        if args.only and key != args.only:
            continue
        Y, _ = glad_problem(m, n, K)
        res, t_vec, mem_vec = measure(rank, Y, K)
        loop_score, t_loop, mem_loop = measure(loop_rank, Y, K)
        same = np.array_equal(ranks_descending(loop_score), res.rank)
        print(
            f"{key:4} {m:7d} {n:3d} {K:5d} {t_vec:8.2f} {mem_vec:8.0f} {targets[key]:8.1f} "
            f"{t_loop:8.2f} {mem_loop:8.0f} {t_loop / t_vec:7.1f}x {str(same):>8} "
            f"{res.iterations:5d}"
        )
        # E-step + Q at the fitted parameters: vectorised vs reference-style loops.
        Yk = Y[res.keep].astype(np.int64)
        rows = min(args.ref_rows, Yk.shape[0])
        sub = Yk[:rows]
        a, b = res.score, res.b[:rows]
        a0, b0 = res.a0, res.b0[:rows]
        (pi_v, q_v), t_v, _ = measure(vector_e_step_q, sub, a, b, K, a0, b0)
        (pi_r, q_r), t_r, _ = measure(reference_e_step_q, sub, a, b, K, a0, b0)
        (_, _), t_full, _ = measure(vector_e_step_q, Yk, res.score, res.b, K, res.a0, res.b0)
        diff = float(np.max(np.abs(pi_v - pi_r)))
        estep_rows.append((key, Yk.shape[0], rows, t_v, t_r, t_full, t_r / t_v, diff, q_v, q_r))
    print()
    print("one E-step + Q: vectorised vs reference style (apply_along_axis, loop over K)")
    print(
        f"{'case':4} {'rows':>7} {'timed':>6} {'vec ms':>8} {'ref ms':>9} {'speedup':>8} "
        f"{'max|dpi|':>9} {'|dQ/Q|':>8} {'ref s, all rows (extrap.)':>26} {'vec s, all rows':>15}"
    )
    for key, mk, rows, tv, tr, tf, sp, diff, qv, qr in estep_rows:
        print(
            f"{key:4} {mk:7d} {rows:6d} {tv * 1e3:8.1f} {tr * 1e3:9.0f} {sp:7.0f}x "
            f"{diff:9.1e} {abs(qv - qr) / abs(qr):8.1e} {tr * mk / rows:26.1f} {tf:15.2f}"
        )


if __name__ == "__main__":
    main()
