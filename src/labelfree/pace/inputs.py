"""Input pools of the small-scale PACE subjects on digits (docs/pace.md, reading R16): mutated and
generated pools,
the rotation-angle regression subject, and subjects built from inference artefacts.

Pools are uint8 NHWC image sets (the project's array format). Mutations follow the paper's Driving-patch / -light at
digits scale (small zero patches, brightness/contrast change with clipping); generated inputs
follow its Autogen-* recipe (L-inf FGSM / BIM with torch autograd, 50 % adversarial + 50 % clean).
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
from scipy.ndimage import map_coordinates

log = logging.getLogger(__name__)


# ------------------------------------------------------------------------------ enlarged pool


def shifted_pool(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The images plus their four one-pixel shifts (up, down, left, right; zero fill), labels
    kept: a deterministic pool enlargement (5 x N inputs)."""
    parts = [x]
    for axis, step in ((1, -1), (1, 1), (2, -1), (2, 1)):
        s = np.roll(x, step, axis=axis)
        edge = [slice(None)] * 4
        edge[axis] = 0 if step == 1 else -1
        s[tuple(edge)] = 0
        parts.append(s)
    return np.concatenate(parts), np.concatenate([y] * 5)


# ------------------------------------------------------------------------------ mutated pools


def patch_images(x: np.ndarray, rng: np.random.Generator, size: int = 3,
                 count: tuple[int, int] = (1, 2), value: int = 0) -> np.ndarray:
    """Occlusion (Driving-patch, digits analogue): ``count`` squares of ``size`` px set to
    ``value`` at uniform random positions per image (vectorised over images)."""
    out = x.copy()
    n, h, w, _ = x.shape
    k = rng.integers(count[0], count[1] + 1, size=n)
    rows = np.arange(h)[None, :, None]
    cols = np.arange(w)[None, None, :]
    mask = np.zeros((n, h, w), dtype=bool)
    for j in range(count[1]):  # loop over patch slots, not images
        top = rng.integers(0, h - size + 1, size=n)[:, None, None]
        left = rng.integers(0, w - size + 1, size=n)[:, None, None]
        inside = (rows >= top) & (rows < top + size) & (cols >= left) & (cols < left + size)
        mask |= inside & (j < k)[:, None, None]
    out[mask] = value
    return out


def light_images(x: np.ndarray, rng: np.random.Generator, offset: tuple[float, float] = (40, 120),
                 contrast: tuple[float, float] = (0.4, 1.0)) -> np.ndarray:
    """Brightness/contrast change (Driving-light, one constant per image):
    ``clip(c * x + b)`` with ``c ~ U(contrast)``, ``b ~ U(offset)`` on the 0..255 scale."""
    n = len(x)
    c = rng.uniform(*contrast, size=n)[:, None, None, None]
    b = rng.uniform(*offset, size=n)[:, None, None, None]
    return np.clip(np.rint(c * x.astype(np.float64) + b), 0, 255).astype(np.uint8)


# ------------------------------------------------------------------------------ generated pools


def adversarial(model, x: np.ndarray, y: np.ndarray, preprocessing: str = "scale01",
                method: str = "bim", eps: float = 0.25, steps: int = 10,
                step_size: float | None = None, batch: int = 512) -> np.ndarray:
    """L-inf FGSM (one step of size eps) or BIM (``steps`` steps of ``step_size``, projected to
    the eps-ball) on the [0, 1] pixel scale, by torch autograd through the model's own
    preprocessing (reading R16). Returns uint8 images."""
    # deferred: torch; run.py imports this module for the experiment jobs, which never load it
    import torch

    from labelfree.zoo.preprocess import preprocess

    if method not in ("fgsm", "bim"):
        raise ValueError(f"adversarial: method {method!r} is not 'fgsm' or 'bim'")
    step = eps if method == "fgsm" else (step_size or eps / steps)
    n_steps = 1 if method == "fgsm" else steps
    model.eval()
    outs = []
    loss_fn = torch.nn.CrossEntropyLoss(reduction="sum")
    for s in range(0, len(x), batch):
        x0 = torch.from_numpy(x[s:s + batch].astype(np.float32))  # 0..255 NHWC
        yy = torch.from_numpy(np.asarray(y[s:s + batch], dtype=np.int64))
        xa = x0.clone()
        for _ in range(n_steps):
            xa.requires_grad_(True)
            loss = loss_fn(model(preprocess(xa, preprocessing)), yy)
            (grad,) = torch.autograd.grad(loss, xa)
            with torch.no_grad():
                xa = xa + 255.0 * step * grad.sign()
                xa = torch.min(torch.max(xa, x0 - 255.0 * eps), x0 + 255.0 * eps).clamp(0, 255)
        outs.append(np.rint(xa.detach().numpy()).astype(np.uint8))
    return np.concatenate(outs)


def carlini_wagner_l2(model, x: np.ndarray, y: np.ndarray, preprocessing: str = "scale01",
                      steps: int = 100, binary_steps: int = 5, lr: float = 0.01,
                      initial_const: float = 0.01, confidence: float = 0.0,
                      batch: int = 512) -> np.ndarray:
    """Untargeted C&W L2 attack (Carlini & Wagner, S&P 2017: objective ``||x' - x||_2^2 + c
    max(Z_y - max_{i != y} Z_i, -kappa)`` with ``x' = (tanh w + 1) / 2`` on the [0, 1] pixel
    scale, Adam, a binary search over ``c`` per image). Success and distance are judged on the
    image rounded to uint8, as the pool stores it: the smallest such misclassified image per
    input is returned, the input itself where the attack never succeeds. ``confidence``
    (kappa, in logits) lets the adversarial survive rounding. Table 11's C&W pool (reading R16)."""
    # deferred: torch; run.py imports this module for the experiment jobs, which never load it
    import torch

    from labelfree.zoo.preprocess import preprocess

    model.eval()
    outs = []
    for s in range(0, len(x), batch):
        x0 = torch.from_numpy(x[s:s + batch].astype(np.float64) / 255.0).float()
        yy = torch.from_numpy(np.asarray(y[s:s + batch], dtype=np.int64))
        n = len(x0)
        onehot = torch.nn.functional.one_hot(yy, num_classes=int(model(preprocess(
            x0[:1] * 255.0, preprocessing)).shape[1])).bool()
        w0 = torch.atanh((2.0 * x0 - 1.0).clamp(-1 + 1e-6, 1 - 1e-6))
        const = torch.full((n,), float(initial_const))
        lo, hi = torch.zeros(n), torch.full((n,), float("inf"))
        best_l2 = torch.full((n,), float("inf"))
        best = x0.clone()
        for _ in range(binary_steps):
            w = w0.clone().requires_grad_(True)
            opt = torch.optim.Adam([w], lr=lr)
            won = torch.zeros(n, dtype=torch.bool)
            for _ in range(steps):
                xa = (torch.tanh(w) + 1.0) / 2.0
                z = model(preprocess(xa * 255.0, preprocessing))
                real = z[onehot]
                other = z.masked_fill(onehot, float("-inf")).amax(dim=1)
                f = torch.clamp(real - other + confidence, min=0.0)
                l2 = ((xa - x0) ** 2).flatten(1).sum(dim=1)
                opt.zero_grad()
                (l2 + const * f).sum().backward()
                opt.step()
                with torch.no_grad():  # judge the uint8 image the pool will hold
                    xr = torch.round(((torch.tanh(w) + 1.0) / 2.0) * 255.0) / 255.0
                    wrong = model(preprocess(xr * 255.0, preprocessing)).argmax(dim=1) != yy
                    d2 = ((xr - x0) ** 2).flatten(1).sum(dim=1)
                    better = wrong & (d2 < best_l2)
                    best_l2 = torch.where(better, d2, best_l2)
                    best[better] = xr[better]
                    won |= wrong
            hi = torch.where(won, torch.minimum(hi, const), hi)
            lo = torch.where(won, lo, torch.maximum(lo, const))
            const = torch.where(torch.isinf(hi), const * 10.0, (lo + hi) / 2.0)
        outs.append(np.rint(best.numpy() * 255.0).astype(np.uint8))
    return np.concatenate(outs)


def adversarial_pool(model, x: np.ndarray, y: np.ndarray, rng: np.random.Generator,
                     preprocessing: str = "scale01", method: str = "bim", eps: float = 0.25,
                     steps: int = 10, cw: dict | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Autogen-* recipe (reading R16): a random half of the pool is attacked, the other half stays clean.
    ``method``: 'fgsm', 'bim' (``eps``, ``steps``) or 'cw' (``carlini_wagner_l2`` with the
    keyword arguments in ``cw``). Returns (x, y, is_adversarial) in the original order."""
    n = len(x)
    adv = np.zeros(n, dtype=bool)
    adv[rng.permutation(n)[: n // 2]] = True
    out = x.copy()
    if adv.any():
        if method == "cw":
            out[adv] = carlini_wagner_l2(model, x[adv], y[adv], preprocessing, **(cw or {}))
        else:
            out[adv] = adversarial(model, x[adv], y[adv], preprocessing, method, eps, steps)
    return out, y, adv


# ------------------------------------------------------------------------------ regression subject


def rotate_images(x: np.ndarray, angles_rad: np.ndarray) -> np.ndarray:
    """Rotate each image about its centre by its angle (bilinear, zero fill), vectorised with
    ``scipy.ndimage.map_coordinates`` over the stacked images (regression analogue, reading R16)."""
    n, h, w, c = x.shape
    img = x[..., 0].astype(np.float64) if c == 1 else x.mean(axis=3)
    cy, cx = (h - 1) / 2.0, (w - 1) / 2.0
    yy, xx = np.meshgrid(np.arange(h) - cy, np.arange(w) - cx, indexing="ij")
    cos = np.cos(angles_rad)[:, None, None]
    sin = np.sin(angles_rad)[:, None, None]
    src_y = cos * yy[None] - sin * xx[None] + cy  # inverse rotation of the output grid
    src_x = sin * yy[None] + cos * xx[None] + cx
    # round away float noise (e.g. sin(pi) = 1e-16): a coordinate a hair outside the image
    # would otherwise read the zero fill
    src_y, src_x = np.round(src_y, 9), np.round(src_x, 9)
    idx = np.broadcast_to(np.arange(n)[:, None, None], src_y.shape)
    out = map_coordinates(img, [idx, src_y, src_x], order=1, mode="constant", cval=0.0)
    out = np.clip(np.rint(out), 0, 255).astype(np.uint8)[..., None]
    return np.repeat(out, c, axis=3) if c > 1 else out


class RotationRegressor:
    """A small ReLU MLP regressor of the rotation angle (radians) from pixels /255.

    Our zoo has classifiers only, so the regression subject (Dave analogue, reading R16) brings its
    own model: scikit-learn ``MLPRegressor``; FL = first hidden activations, LHL = last hidden
    activations, computed from ``coefs_``.
    """

    def __init__(self, hidden: tuple[int, ...] = (64, 32), seed: int = 0, max_iter: int = 300):
        # deferred: scikit-learn (seconds to import), needed only by the subjects job
        from sklearn.neural_network import MLPRegressor

        self.net = MLPRegressor(hidden_layer_sizes=hidden, random_state=seed, max_iter=max_iter,
                                early_stopping=False, learning_rate_init=1e-3)

    @staticmethod
    def inputs(x: np.ndarray) -> np.ndarray:
        return x.reshape(len(x), -1).astype(np.float64) / 255.0

    def fit(self, x: np.ndarray, angles: np.ndarray) -> RotationRegressor:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.net.fit(self.inputs(x), angles)
        return self

    def hidden(self, x: np.ndarray) -> list[np.ndarray]:
        a = self.inputs(x)
        acts = []
        for w, b in zip(self.net.coefs_[:-1], self.net.intercepts_[:-1], strict=True):
            a = np.maximum(a @ w + b, 0.0)
            acts.append(a)
        return acts

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.net.predict(self.inputs(x))
