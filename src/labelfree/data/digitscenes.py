"""DigitScenes: synthetic object-in-context scenes from scikit-learn's digits.

How and why: docs/data.md, reading R4.

Each scene is a textured background of one of 10 families T0..T9 with a white digit glyph
alpha-blended on top. A bias parameter ``rho`` ties the background family to the label, so a
model can learn the background instead of the object (the shortcut the metamorphic relations
are meant to expose). Scenes carry their annotation (a box and a mask), annotation defects
("multiple": a second unannotated glyph of the same class; "incomplete": a shrunken box), the
hidden masks of every instance (for oracle precision) and optional counterfactual re-renders of
the same glyphs on backgrounds of other families (ground truth of background reliance).

Array format (ARCHITECTURE.md): ``x`` uint8 (N, H, W, 3); ``y`` int64 (N,) or multi-hot (N, 10);
extras ``boxes`` int64 (N, 4) half-open xyxy of the annotation, ``masks`` bool (N, H, W) the
annotated region, ``inst_masks`` bool (N, M, H, W) every target instance (hidden truth; test
splits), ``defect`` int8 (N,) bit 1 = multiple, bit 2 = incomplete, ``bg_family`` int64 (N,)
(-1 = flat colour), ``glyph_size`` int64 (N,); with counterfactuals ``cf_x`` uint8
(N, k, H, W, 3) and ``cf_family`` int64 (N, k).

Everything is vectorised over the batch (loops run over at most 4 glyph sizes or 3 glyph slots).
"""

from __future__ import annotations

import colorsys
import functools
import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from labelfree.seeds import derive_seed
from labelfree.store import ImageSet

N_CLASSES = 10

#: Options of the generator with their defaults (docs/data.md, reading R4); `build` refuses unknown
#: keys.
DEFAULTS: dict[str, Any] = {
    "n": 5000,  # total images; split sizes = round(fraction * n) from the dataset's `splits`
    "size": 32,  # canvas side in pixels (48 for the multi-label variant)
    "multilabel": False,  # 2-3 glyphs of distinct classes, multi-hot labels, union masks
    "n_glyphs": [2, 3],  # glyphs per multi-label scene (uniform choice)
    "rho": 0.0,  # bias of every non-training split (and of `train` unless rho_train is set)
    "rho_train": None,  # bias of the `train` split; None = rho
    "glyph_sizes": [20],  # glyph side in px, drawn uniformly per scene (RQ4: [12, 16, 20, 24])
    "jitter": 3,  # glyph centre offset, uniform in [-jitter, jitter] px
    "flat_bg_frac": 0.1,  # training split only: share of flat random-colour backgrounds
    "clutter": True,  # 0-2 faint line segments per background
    "noise": 0.03,  # Gaussian pixel noise (sigma, [0, 1] scale)
    "amplitude": 0.12,  # grating amplitude
    "defects": False,  # non-training splits only: annotation defects
    "p_multiple": 0.15,  # P(second unannotated glyph of the same class)
    "p_incomplete": 0.10,  # P(box shrunk to `incomplete_scale` of the glyph's sides)
    "incomplete_scale": 0.6,
    "mask_alpha": 0.35,  # mask = alpha > mask_alpha
    "counterfactuals": 0,  # re-renders per non-training scene on other families (reading R4)
}


class DigitScenesError(ValueError):
    """Invalid DigitScenes options; the message names the option and the value."""


def check_options(options: Mapping[str, Any] | None, where: str = "digitscenes") -> dict[str, Any]:
    """Fill defaults and validate every option (clear errors naming the key)."""
    opts = dict(options or {})
    unknown = sorted(set(opts) - set(DEFAULTS))
    if unknown:
        raise DigitScenesError(
            f"{where}: unknown option(s) {unknown}; allowed options: {sorted(DEFAULTS)}"
        )
    o = {**DEFAULTS, **opts}

    def bad(key: str, why: str) -> DigitScenesError:
        return DigitScenesError(f"{where}: option {key}={o[key]!r} {why}")

    for key in ("n", "size", "jitter", "counterfactuals"):
        if not isinstance(o[key], int) or isinstance(o[key], bool) or o[key] < 0:
            raise bad(key, "must be a non-negative integer")
    if o["size"] < 16:
        raise bad("size", "must be >= 16")
    for key in ("rho", "flat_bg_frac", "p_multiple", "p_incomplete", "noise", "amplitude"):
        if not isinstance(o[key], int | float) or not 0 <= o[key] <= 1:
            raise bad(key, "must be a number in [0, 1]")
    if o["rho_train"] is not None and not (
        isinstance(o["rho_train"], int | float) and 0 <= o["rho_train"] <= 1
    ):
        raise bad("rho_train", "must be null or a number in [0, 1]")
    for key in ("incomplete_scale", "mask_alpha"):
        if not isinstance(o[key], int | float) or not 0 < o[key] < 1:
            raise bad(key, "must be a number in (0, 1)")
    for key in ("multilabel", "clutter", "defects"):
        if not isinstance(o[key], bool):
            raise bad(key, "must be true or false")
    sizes = o["glyph_sizes"]
    if (
        not isinstance(sizes, list | tuple)
        or not sizes
        or not all(isinstance(s, int) and 6 <= s <= o["size"] for s in sizes)
    ):
        raise bad("glyph_sizes", f"must be a non-empty list of integers in [6, {o['size']}]")
    ng = o["n_glyphs"]
    if not isinstance(ng, list | tuple) or not ng or not all(
        isinstance(k, int) and 1 <= k <= 3 for k in ng
    ):
        raise bad("n_glyphs", "must be a non-empty list of integers in [1, 3]")
    if o["multilabel"] and max(sizes) > o["size"] // 2:
        raise bad("glyph_sizes", f"must fit a quadrant (<= {o['size'] // 2}) in multi-label scenes")
    if o["counterfactuals"] > 7:
        raise bad("counterfactuals", "must be at most 7 (families other than the labels)")
    o["glyph_sizes"] = [int(s) for s in sizes]
    o["n_glyphs"] = [int(k) for k in ng]
    return o


# --------------------------------------------------------------------------------------------
# glyphs
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def glyph_pool() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn's 1,797 8x8 digits as alpha in [0, 1], labels, and the split mask.

    Split by index, stratified by class (docs/data.md, reading R4): within each class, every third
    glyph (in index order) is a test glyph, the others (2/3) training glyphs.
    """
    found = importlib.util.find_spec("sklearn")
    path = Path(found.origin).parent / "datasets" / "data" / "digits.csv.gz" if found else None
    if path is not None and path.exists():  # the file load_digits reads, without importing sklearn
        raw = np.loadtxt(path, delimiter=",", dtype=np.float64)
        images, target = raw[:, :-1].reshape(-1, 8, 8), raw[:, -1]
    else:
        # deferred: parse-time module; scikit-learn takes several seconds to import (a fallback
        # only)
        from sklearn.datasets import load_digits

        d = load_digits()
        images, target = d.images, d.target
    alpha = (images / 16.0).astype(np.float32)
    y = target.astype(np.int64)
    order = np.argsort(y, kind="stable")
    rank = np.empty(len(y), dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(np.bincount(y))[:-1]])
    rank[order] = np.arange(len(y)) - np.repeat(starts, np.bincount(y))
    is_train = rank % 3 != 2
    return alpha, y, is_train


def _bilinear_matrix(out: int, inp: int = 8) -> np.ndarray:
    """(out, inp) bilinear interpolation weights (pixel centres aligned, edges clamped)."""
    u = np.clip((np.arange(out) + 0.5) * inp / out - 0.5, 0, inp - 1)
    lo = np.floor(u).astype(np.int64)
    hi = np.minimum(lo + 1, inp - 1)
    w = u - lo
    m = np.zeros((out, inp))
    m[np.arange(out), lo] += 1 - w
    m[np.arange(out), hi] += w
    return m


@functools.lru_cache(maxsize=16)
def _upscaled(size: int) -> np.ndarray:
    """Every glyph upscaled bilinearly to ``size`` x ``size`` (1797, s, s)."""
    a = _bilinear_matrix(size).astype(np.float32)
    alpha, _, _ = glyph_pool()
    return np.clip(a @ alpha @ a.T, 0.0, 1.0)


def _draw_glyphs(pool_idx: np.ndarray, class_of: np.ndarray, labels: np.ndarray,
                 rng: np.random.Generator) -> np.ndarray:
    """A random glyph index of class ``labels[i]`` from ``pool_idx`` for each i (vectorised)."""
    cls = class_of[pool_idx]
    order = np.argsort(cls, kind="stable")
    sorted_idx = pool_idx[order]
    counts = np.bincount(cls, minlength=N_CLASSES)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    pick = (rng.random(len(labels)) * counts[labels]).astype(np.int64)
    return sorted_idx[starts[labels] + pick]


def _place(canvas: np.ndarray, glyph_idx: np.ndarray, sizes: np.ndarray, oy: np.ndarray,
           ox: np.ndarray, rows: np.ndarray) -> None:
    """Write upscaled glyphs into ``canvas[rows]`` (M, H, W) at top-left (oy, ox), in place."""
    for s in np.unique(sizes):
        sel = np.nonzero(sizes == s)[0]
        g = _upscaled(int(s))[glyph_idx[sel]]
        r = oy[sel, None] + np.arange(s)[None, :]
        c = ox[sel, None] + np.arange(s)[None, :]
        canvas[rows[sel, None, None], r[:, :, None], c[:, None, :]] = g


# --------------------------------------------------------------------------------------------
# backgrounds
# --------------------------------------------------------------------------------------------


def family_tints() -> np.ndarray:
    """One RGB tint per family: 10 hues around the colour wheel (saturation 0.75, value 0.85)."""
    return np.array([colorsys.hsv_to_rgb(k / N_CLASSES, 0.75, 0.85) for k in range(N_CLASSES)])


def backgrounds(family: np.ndarray, size: int, rng: np.random.Generator, opts: Mapping[str, Any],
                flat: np.ndarray | None = None) -> np.ndarray:
    """Backgrounds (N, H, W, 3) in [0, 1] for families (N,) (docs/data.md, reading R4).

    Family k: a sinusoidal grating of orientation 18 deg * k and frequency set by k mod 3, random
    phase, amplitude ~0.12, blended 60/40 with the family tint; Gaussian noise; optional clutter
    of 0-2 faint line segments. ``flat`` (N,) bool selects flat random-colour backgrounds.
    """
    n = len(family)
    fam = np.clip(family, 0, N_CLASSES - 1)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size
    theta = np.deg2rad(18.0 * fam).astype(np.float32)
    freq = np.array([2.0, 3.5, 5.0], dtype=np.float32)[fam % 3]
    phase = rng.uniform(0, 2 * np.pi, n).astype(np.float32)
    u = xx[None] * np.cos(theta)[:, None, None] + yy[None] * np.sin(theta)[:, None, None]
    grating = 0.5 + np.float32(opts["amplitude"]) * np.sin(2 * np.pi * freq[:, None, None] * u + phase[:, None, None])
    tint = family_tints().astype(np.float32)[fam]
    bg = 0.6 * grating[..., None] + 0.4 * tint[:, None, None, :]
    if flat is not None and flat.any():
        colours = rng.uniform(0.0, 0.85, (n, 3)).astype(np.float32)
        bg = np.where(flat[:, None, None, None], colours[:, None, None, :], bg)
    if opts["clutter"]:
        k = rng.integers(0, 3, n)
        pts = 2 * size
        ends = rng.uniform(0, size - 1, (n, 2, 2, 2))  # image, segment, endpoint, (y, x)
        t = np.linspace(0, 1, pts)
        line = ends[:, :, 0, None, :] + t[None, None, :, None] * (ends[:, :, 1, None, :] - ends[:, :, 0, None, :])
        li = np.rint(line).astype(np.int64)
        active = np.arange(2)[None, :] < k[:, None]  # (n, 2)
        img = np.broadcast_to(np.arange(n)[:, None, None], li.shape[:3])
        a = np.zeros((n, size, size), dtype=np.float32)
        sel = np.broadcast_to(active[:, :, None], li.shape[:3])
        a[img[sel], li[..., 0][sel], li[..., 1][sel]] = 0.25
        grey = rng.uniform(0.2, 0.8, n).astype(np.float32)
        bg = bg * (1 - a[..., None]) + a[..., None] * grey[:, None, None, None]
    if opts["noise"] > 0:
        bg += np.float32(opts["noise"]) * rng.standard_normal(bg.shape, dtype=np.float32)
    return np.clip(bg, 0.0, 1.0, out=bg)


def _biased_family(labels: np.ndarray, rho: float, rng: np.random.Generator) -> np.ndarray:
    """With probability rho the family equals the label, else uniform over the 10 (docs/data.md,
    reading R4)."""
    forced = rng.random(len(labels)) < rho
    return np.where(forced, labels, rng.integers(0, N_CLASSES, len(labels)))


def _other_families(label_sets: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k distinct families per row outside the row's labels (multi-hot (N, 10)) -> (N, k)."""
    keys = rng.random(label_sets.shape)
    keys[label_sets.astype(bool)] = np.inf
    return np.argsort(keys, axis=1)[:, :k]


def _tight_boxes(masks: np.ndarray) -> np.ndarray:
    """Half-open xyxy bounds of bool masks (N, H, W); all-zero for an empty mask."""
    rows = masks.any(axis=2)
    cols = masks.any(axis=1)
    h, w = masks.shape[1:]
    has = rows.any(axis=1)
    y0 = np.argmax(rows, axis=1)
    y1 = h - np.argmax(rows[:, ::-1], axis=1)
    x0 = np.argmax(cols, axis=1)
    x1 = w - np.argmax(cols[:, ::-1], axis=1)
    return np.where(has[:, None], np.stack([x0, y0, x1, y1], axis=1), 0).astype(np.int64)


def _to_uint8(a: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(a * 255.0), 0, 255).astype(np.uint8)


# --------------------------------------------------------------------------------------------
# scenes
# --------------------------------------------------------------------------------------------


def generate(n: int, seed: int, opts: Mapping[str, Any], training: bool) -> dict[str, np.ndarray]:
    """``n`` scenes from a generator seeded by ``seed`` (options already checked).

    ``training`` selects the training glyph pool, ``rho_train`` and flat backgrounds; otherwise
    the test pool, ``rho``, defects and counterfactual re-renders. Returns the arrays of the
    module docstring (``x``, ``y`` and extras). About 80 lines: one
    generator draws every scene's parts in a fixed order (the data depends on it), so the
    draws stay in one function.
    """
    rng = np.random.default_rng(seed)
    alpha_pool, class_of, is_train = glyph_pool()
    pool = np.nonzero(is_train if training else ~is_train)[0]
    rho = opts["rho"] if not training or opts["rho_train"] is None else opts["rho_train"]
    if opts["multilabel"]:
        return _generate_multilabel(n, rng, opts, training, pool, class_of, rho)
    size = opts["size"]
    labels = rng.integers(0, N_CLASSES, n)
    fam = _biased_family(labels, rho, rng)
    flat = (rng.random(n) < opts["flat_bg_frac"]) if training else np.zeros(n, dtype=bool)
    bg_family = np.where(flat, -1, fam)
    gsize = np.asarray(opts["glyph_sizes"])[rng.integers(0, len(opts["glyph_sizes"]), n)]
    with_defects = bool(opts["defects"]) and not training
    multiple = (rng.random(n) < opts["p_multiple"]) & with_defects
    incomplete = (rng.random(n) < opts["p_incomplete"]) & with_defects
    j = opts["jitter"]
    dy = rng.integers(-j, j + 1, (n, 2))
    dx = rng.integers(-j, j + 1, (n, 2))
    # "multiple" scenes: two smaller glyphs side by side, one annotated at random
    s_multi = np.minimum(gsize, (size * 7) // 16)
    s = np.where(multiple, s_multi, gsize)
    cy = (size - s) // 2
    left = size // 4 - s // 2
    right = (3 * size) // 4 - s // 2
    ox0 = np.where(multiple, left, (size - s) // 2) + dx[:, 0]
    ox1 = right + dx[:, 1]
    oy0 = np.clip(cy + dy[:, 0], 0, size - s)
    oy1 = np.clip(cy + dy[:, 1], 0, size - s)
    ox0 = np.clip(ox0, 0, size - s)
    ox1 = np.clip(ox1, 0, size - s)
    g0 = _draw_glyphs(pool, class_of, labels, rng)
    g1 = _draw_glyphs(pool, class_of, labels, rng)
    inst = np.zeros((n, 2, size, size), dtype=np.float32)
    idx = np.arange(n)
    _place(inst[:, 0], g0, s, oy0, ox0, idx)
    m_idx = np.nonzero(multiple)[0]
    sub = np.zeros((len(m_idx), size, size), dtype=np.float32)
    _place(sub, g1[m_idx], s[m_idx], oy1[m_idx], ox1[m_idx], np.arange(len(m_idx)))
    inst[m_idx, 1] = sub
    obj_alpha = 1.0 - (1.0 - inst[:, 0]) * (1.0 - inst[:, 1])
    inst_masks = inst > opts["mask_alpha"]
    annotated = np.where(multiple & (rng.random(n) < 0.5), 1, 0)
    ann_mask = inst_masks[idx, annotated]
    boxes = _tight_boxes(ann_mask)
    if incomplete.any():
        b = boxes[incomplete].astype(np.float64)
        c = (b[:, :2] + b[:, 2:]) / 2
        half = (b[:, 2:] - b[:, :2]) * opts["incomplete_scale"] / 2
        shrunk = np.concatenate([np.floor(c - half + 0.5), np.floor(c + half + 0.5)], axis=1)
        boxes[incomplete] = shrunk.astype(np.int64)
        ys = np.arange(size)
        b = boxes[incomplete]
        inside = (
            ((ys[None, :] >= b[:, 1:2]) & (ys[None, :] < b[:, 3:4]))[:, :, None]
            & ((ys[None, :] >= b[:, 0:1]) & (ys[None, :] < b[:, 2:3]))[:, None, :]
        )
        ann_mask[incomplete] &= inside
    bg = backgrounds(fam, size, rng, opts, flat)
    x = bg * (1.0 - obj_alpha[..., None]) + obj_alpha[..., None]
    out: dict[str, np.ndarray] = {
        "x": _to_uint8(x),
        "y": labels.astype(np.int64),
        "boxes": boxes,
        "masks": ann_mask,
        "defect": (multiple.astype(np.int8) | (incomplete.astype(np.int8) << 1)),
        "bg_family": bg_family.astype(np.int64),
        "glyph_size": gsize.astype(np.int64),
    }
    if not training:
        out["inst_masks"] = inst_masks
    k = opts["counterfactuals"]
    if k and not training:
        onehot = np.eye(N_CLASSES, dtype=bool)[labels]
        out.update(_counterfactuals(obj_alpha, onehot, k, size, rng, opts))
    return out


def _counterfactuals(obj_alpha: np.ndarray, label_sets: np.ndarray, k: int, size: int,
                     rng: np.random.Generator, opts: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The same glyphs at the same positions on k backgrounds of families outside the labels."""
    n = len(obj_alpha)
    cf_family = _other_families(label_sets, k, rng)
    bg = backgrounds(cf_family.reshape(-1), size, rng, opts).reshape(n, k, size, size, 3)
    a = obj_alpha[:, None, :, :, None]
    return {"cf_x": _to_uint8(bg * (1.0 - a) + a), "cf_family": cf_family.astype(np.int64)}


def _generate_multilabel(n: int, rng: np.random.Generator, opts: Mapping[str, Any], training: bool,
                         pool: np.ndarray, class_of: np.ndarray, rho: float) -> dict[str, np.ndarray]:
    """48x48 scenes with 2-3 glyphs of distinct classes in distinct quadrants (docs/data.md,
    reading R4)."""
    size = opts["size"]
    half = size // 2
    n_glyphs = np.asarray(opts["n_glyphs"])[rng.integers(0, len(opts["n_glyphs"]), n)]
    classes = np.argsort(rng.random((n, N_CLASSES)), axis=1)[:, :3]
    cells = np.argsort(rng.random((n, 4)), axis=1)[:, :3]
    present = np.arange(3)[None, :] < n_glyphs[:, None]
    y = np.zeros((n, N_CLASSES), dtype=np.int64)
    rows = np.repeat(np.arange(n), 3).reshape(n, 3)
    y[rows[present], classes[present]] = 1
    fam = _biased_family(classes[:, 0], rho, rng)
    flat = (rng.random(n) < opts["flat_bg_frac"]) if training else np.zeros(n, dtype=bool)
    gsize = np.asarray(opts["glyph_sizes"])[rng.integers(0, len(opts["glyph_sizes"]), (n, 3))]
    j = opts["jitter"]
    inst = np.zeros((n, 3, size, size), dtype=np.float32)
    for slot in range(3):  # at most 3 glyph slots
        sel = np.nonzero(present[:, slot])[0]
        s = gsize[sel, slot]
        cell = cells[sel, slot]
        base_y = (cell // 2) * half + (half - s) // 2
        base_x = (cell % 2) * half + (half - s) // 2
        oy = np.clip(base_y + rng.integers(-j, j + 1, len(sel)), (cell // 2) * half,
                     (cell // 2) * half + half - s)
        ox = np.clip(base_x + rng.integers(-j, j + 1, len(sel)), (cell % 2) * half,
                     (cell % 2) * half + half - s)
        g = _draw_glyphs(pool, class_of, classes[sel, slot], rng)
        sub = np.zeros((len(sel), size, size), dtype=np.float32)
        _place(sub, g, s, oy, ox, np.arange(len(sel)))
        inst[sel, slot] = sub
    obj_alpha = 1.0 - np.prod(1.0 - inst, axis=1)
    inst_masks = inst > opts["mask_alpha"]
    union = inst_masks.any(axis=1)
    bg = backgrounds(fam, size, rng, opts, flat)
    x = bg * (1.0 - obj_alpha[..., None]) + obj_alpha[..., None]
    out: dict[str, np.ndarray] = {
        "x": _to_uint8(x),
        "y": y,
        "boxes": _tight_boxes(union),
        "masks": union,
        "defect": np.zeros(n, dtype=np.int8),
        "bg_family": np.where(flat, -1, fam).astype(np.int64),
        "glyph_size": gsize[:, 0].astype(np.int64),
    }
    if not training:
        out["inst_masks"] = inst_masks
    k = opts["counterfactuals"]
    if k and not training:
        out.update(_counterfactuals(obj_alpha, y.astype(bool), k, size, rng, opts))
    return out


def as_image_set(arrays: Mapping[str, np.ndarray]) -> ImageSet:
    """Wrap generated arrays in the store's :class:`ImageSet`."""
    extras = {k: v for k, v in arrays.items() if k not in ("x", "y")}
    return ImageSet(x=arrays["x"], y=arrays["y"], extras=extras)


def build(cfg: Mapping[str, Any], seed: int) -> dict[str, ImageSet]:
    """Registry entry point: every split of a ``source: digitscenes`` dataset (docs/data.md,
    reading R4).

    ``cfg`` is the dataset's config: ``splits`` (name -> fraction of ``options.n``) and
    ``options`` (see :data:`DEFAULTS`). The split named ``train`` uses the training glyphs,
    ``rho_train`` and flat backgrounds; every other split uses the test glyphs, ``rho``,
    defects and counterfactuals. Each split is seeded from ``seed`` and its name.
    """
    where = f"dataset source digitscenes ({cfg.get('name', 'options')})"
    opts = check_options(cfg.get("options"), where)
    splits = dict(cfg.get("splits") or {"train": 0.75, "test": 0.25})
    if sum(splits.values()) > 1 + 1e-9:
        raise DigitScenesError(f"{where}: split fractions {splits} sum to more than 1")
    out: dict[str, ImageSet] = {}
    for name, frac in splits.items():
        n = int(round(float(frac) * opts["n"]))
        if n < 1:
            raise DigitScenesError(f"{where}: split {name!r} gets no images ({frac} x n={opts['n']})")
        s = derive_seed(seed, "digitscenes", name)
        out[name] = as_image_set(generate(n, s, opts, training=(name == "train")))
    return out
