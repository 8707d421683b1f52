"""SYP per-sample indicators (paper Sections 3.2-3.3; docs/syp.md, readings R1-R4), vectorised
over a whole test set.

Model-based: entropy H, the ATC term A, the dataset-level Frechet distance FD.
Image-based (classifier-independent): pixel standard deviation, the pixel entropy term and the
Laplacian-variance blur. The feature vector is ``[H, A, std, IE, blur, FD]`` (paper eq. 12 in
the authors' code's order); FD is
constant over the rows of a set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from labelfree.numerics import entropy

#: The DataCV 2023 kit's classifier normalisation constants, used by the reference blur
#: (docs/syp.md, reading R4).
KIT_MEAN = (0.4914, 0.4822, 0.4465)
KIT_STD = (0.2023, 0.1994, 0.2010)
ATC_FORMS = ("difference", "ratio", "binary")
BLUR_FORMS = ("reference", "clean")


@dataclass(frozen=True)
class ATCThreshold:
    """The entropy threshold ``t`` and the clean accuracy ``a`` it was derived from (docs/syp.md,
    reading R2)."""

    t: float
    accuracy: float
    n: int


def atc_threshold(probs: np.ndarray, labels: np.ndarray) -> ATCThreshold:
    """ATC threshold on the clean in-distribution test set (authors' code):
    ``t = sorted(H)[ceil(a N)]``.

    0-based index, clipped to N-1 when a = 1. The fraction of clean samples with ``H < t`` then
    equals the clean accuracy ``a`` (exactly with distinct entropies; docs/syp.md, reading R2).
    """
    p = np.asarray(probs)
    y = np.asarray(labels)
    if len(p) != len(y) or len(p) == 0:
        raise ValueError(f"atc_threshold: {len(p)} probability rows vs {len(y)} labels")
    correct = int(np.sum(p.argmax(axis=1) == y))
    h = np.sort(entropy(p))
    return ATCThreshold(t=float(h[atc_index(correct, len(h))]), accuracy=correct / len(h), n=len(h))


def atc_index(n_correct: int, n: int) -> int:
    """``ceil(a N)`` with ``a = n_correct / N``, i.e. ``n_correct``, clipped to N - 1 (reading R2).

    Integer arithmetic: the float product ``(k / N) * N`` rounds up to k + 1 for some k (576 of the
    10,001 possible counts at N = 10,000), which would move the threshold one sample up. For the
    paper's two classifiers (a = 0.9437 and 0.9439 at N = 10,000) both forms give the same index.
    """
    return min(int(n_correct), int(n) - 1)


def atc_indicator(h: np.ndarray, t: float, form: str = "difference") -> np.ndarray:
    """The per-sample ATC column (docs/syp.md, reading R2).

    ``difference`` (reference code, ResNet-56 script): ``t - H``; ``ratio`` (RepVGG-A0 script):
    ``H / t``; ``binary`` (paper eq. 3-4 on negative entropy): ``1[-H > -t]`` = ``1[H < t]``.
    """
    h = np.asarray(h, dtype=np.float64)
    if form == "difference":
        return t - h
    if form == "ratio":
        if t <= 0:
            raise ValueError(f"atc_form 'ratio' needs a positive threshold, got t={t}")
        return h / t
    if form == "binary":
        return (h < t).astype(np.float64)
    raise ValueError(f"atc_form {form!r} is not one of {ATC_FORMS}")


# ---------------------------------------------------------------------------------------------
# Frechet distance (paper eq. 5-7; docs/syp.md, reading R3)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FeatureStats:
    """Mean (D,) and unbiased covariance (D, D) of penultimate features."""

    mu: np.ndarray
    cov: np.ndarray


def feature_stats(feats: np.ndarray) -> FeatureStats:
    """Mean and ``np.cov`` (rows = samples, unbiased) of an (N, D) feature matrix."""
    f = np.asarray(feats, dtype=np.float64)
    if f.ndim != 2 or len(f) < 2:
        raise ValueError(f"feature_stats: need (N>=2, D) features, got shape {f.shape}")
    return FeatureStats(mu=f.mean(axis=0), cov=np.atleast_2d(np.cov(f, rowvar=False)))


def frechet_distance(a: FeatureStats, b: FeatureStats, eps: float = 1e-6) -> float:
    """Squared Frechet distance ``||mu_a-mu_b||^2 + Tr(S_a + S_b - 2 (S_a S_b)^{1/2})`` (paper eq. 7).

    ``scipy.linalg.sqrtm``; when the root is not finite, ``eps * I`` is added to both covariances
    and the root retried; a negligible imaginary part is dropped (error if the diagonal's imaginary
    part exceeds 1e-3). No outer square root.
    """
    if a.mu.shape != b.mu.shape:
        raise ValueError(f"frechet_distance: feature dims differ {a.mu.shape} vs {b.mu.shape}")
    diff = a.mu - b.mu
    s1, s2 = a.cov, b.cov
    covmean = scipy.linalg.sqrtm(s1 @ s2)
    if not np.isfinite(covmean).all():
        offset = np.eye(len(s1)) * eps
        covmean = scipy.linalg.sqrtm((s1 + offset) @ (s2 + offset))
    if np.iscomplexobj(covmean):
        if not np.allclose(np.diagonal(covmean).imag, 0, atol=1e-3):
            raise ValueError(
                f"frechet_distance: imaginary component {np.abs(covmean.imag).max():.3g} too large"
            )
        covmean = covmean.real
    return float(diff @ diff + np.trace(s1) + np.trace(s2) - 2.0 * np.trace(covmean))


# ---------------------------------------------------------------------------------------------
# image indicators (paper eq. 8-11; docs/syp.md, reading R4), over (N, H, W, C) uint8 images
# ---------------------------------------------------------------------------------------------


def _check_images(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 4:
        raise ValueError(f"image indicators need NHWC images, got shape {x.shape}")
    return x


def pixel_std(x: np.ndarray) -> np.ndarray:
    """Population standard deviation of all raw 0-255 values of each image (authors' code) (N,)."""
    x = _check_images(x)
    return x.reshape(len(x), -1).astype(np.float64).std(axis=1)


def pixel_variance(x: np.ndarray) -> np.ndarray:
    """Paper reading of "variance": Var over all pixels (eq. 8; option ``image_form: paper``)."""
    return pixel_std(x) ** 2


def pixel_entropy_term(x: np.ndarray) -> np.ndarray:
    """Mean of ``-v ln(v + 1e-6)`` with ``v = pixel / 256`` over all raw values (authors' code),
    (N,)."""
    x = _check_images(x)
    v = x.reshape(len(x), -1).astype(np.float64) / 256.0
    return (-v * np.log(v + 1e-6)).mean(axis=1)


def pixel_histogram_entropy(x: np.ndarray) -> np.ndarray:
    """Paper reading of "image entropy": Shannon entropy (nats) of the 256-bin value histogram."""
    x = _check_images(x)
    flat = x.reshape(len(x), -1).astype(np.int64)
    n = flat.shape[1]
    offs = (np.arange(len(x)) * 256)[:, None]
    counts = np.bincount((flat + offs).ravel(), minlength=256 * len(x)).reshape(len(x), 256)
    p = counts / n
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, -p * np.log(p), 0.0).sum(axis=1)


def laplacian_reflect101(img: np.ndarray) -> np.ndarray:
    """3x3 Laplacian ``[[0,1,0],[1,-4,1],[0,1,0]]`` over the last two axes, reflect-101 borders.

    Equivalent to ``cv2.Laplacian(., CV_64F)`` (ksize 1, BORDER_DEFAULT) on every leading index.
    """
    a = np.asarray(img, dtype=np.float64)
    pad = [(0, 0)] * (a.ndim - 2) + [(1, 1), (1, 1)]
    p = np.pad(a, pad, mode="reflect")  # numpy 'reflect' = reflect-101 (edge not repeated)
    return p[..., :-2, 1:-1] + p[..., 2:, 1:-1] + p[..., 1:-1, :-2] + p[..., 1:-1, 2:] - 4.0 * a


def blur_clean(x: np.ndarray) -> np.ndarray:
    """Clean blurriness (reading R4, ``blur_form: clean``): grayscale (mean of channels, 0-255),
    3x3 Laplacian with reflect-101 borders, variance per image (N,)."""
    x = _check_images(x)
    gray = x.astype(np.float64).mean(axis=3)
    lap = laplacian_reflect101(gray)
    return lap.reshape(len(x), -1).var(axis=1)


def kit_normalise(x: np.ndarray) -> np.ndarray:
    """Classifier input of the kit (reading R4): /255, per-channel (x - mean) / std, NCHW float."""
    x = _check_images(x)
    if x.shape[3] != 3:
        raise ValueError(
            f"blur_form 'reference' needs 3-channel images (kit normalisation), got {x.shape}; "
            "use blur_form: clean"
        )
    f = x.astype(np.float64) / 255.0
    f = (f - np.asarray(KIT_MEAN)) / np.asarray(KIT_STD)
    return f.transpose(0, 3, 1, 2)


def wrap_uint8(t: np.ndarray) -> np.ndarray:
    """numpy's float->uint8 cast on x86-64 made explicit: truncate toward zero, then wrap mod 256
    (-2.4 -> 254, -1.5 -> 255, -0.7 -> 0, 2.7 -> 2; reading R4)."""
    return (np.trunc(t).astype(np.int64) % 256).astype(np.uint8)


def blur_reference(x: np.ndarray) -> np.ndarray:
    """Reference-code blurriness (reading R4, ``blur_form: reference``), reproducing its quirk.

    The kit-normalised CHW tensor (3, H, W) is cast to uint8 (wrapping), then read by OpenCV as an
    image of 3 rows, H columns and W channels: a 2-D Laplacian over the (channel, row) plane for each
    image column, reflect-101 borders, variance of the result divided by 10,000.
    """
    t = wrap_uint8(kit_normalise(x))  # (N, 3, H, W)
    planes = t.transpose(0, 3, 1, 2)  # (N, W, 3, H): one (channel, row) plane per column
    lap = laplacian_reflect101(planes)
    return lap.reshape(len(t), -1).var(axis=1) / 1e4


def image_indicators(
    x: np.ndarray, blur_form: str = "reference", image_form: str = "code"
) -> np.ndarray:
    """The three image columns ``[std, IE, blur]`` (N, 3) of a set (docs/syp.md,
    reading R4).

    ``image_form: code`` uses the reference code's std and per-pixel entropy term; ``paper`` the
    paper's variance and histogram entropy.
    """
    if blur_form == "reference":
        blur = blur_reference(x)
    elif blur_form == "clean":
        blur = blur_clean(x)
    else:
        raise ValueError(f"blur_form {blur_form!r} is not one of {BLUR_FORMS}")
    if image_form == "code":
        cols = (pixel_std(x), pixel_entropy_term(x))
    elif image_form == "paper":
        cols = (pixel_variance(x), pixel_histogram_entropy(x))
    else:
        raise ValueError(f"image_form {image_form!r} is not one of ('code', 'paper')")
    return np.stack([*cols, blur], axis=1)


def indicator_matrix(
    probs: np.ndarray,
    images_ind: np.ndarray,
    fd: float,
    t: float,
    atc_form: str = "difference",
) -> np.ndarray:
    """Assemble the (N, 6) indicator matrix ``[H, A, std, IE, blur, FD]`` of one set (paper eq. 12).

    ``images_ind`` is the (N, 3) output of :func:`image_indicators`; ``fd`` the set's FD to the
    training features, repeated on every row.
    """
    h = entropy(probs)
    if images_ind.shape != (len(h), 3):
        raise ValueError(f"indicator_matrix: image indicators {images_ind.shape} vs {len(h)} rows")
    a = atc_indicator(h, t, atc_form)
    return np.column_stack([h, a, images_ind, np.full(len(h), float(fd))])
