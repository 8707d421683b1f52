"""MNIST, Fashion-MNIST, CIFAR-10, CIFAR-100 and SVHN: checksummed files, direct readers.

Files live in ``{root}/{source}/`` (``root`` defaults to ``resources/data``). Checksums are
the ones torchvision 0.2x ships for the same files (``torchvision/datasets/mnist.py``,
``cifar.py``, ``svhn.py``), which are the publishers' archives: MNIST from the OSSCI S3 mirror
(then LeCun's site), Fashion-MNIST from Zalando's S3 bucket, CIFAR from Krizhevsky's page,
SVHN from Stanford's UFLDL site. MNIST and Fashion-MNIST also carry the md5 of each
decompressed IDX file, so re-compressed copies of the same data are accepted.

Splits are the official ones (``train``/``test``; SVHN also ``extra``); ``splits`` in the
config names which to write and the fraction of each to keep (a seeded, stratified subset;
1.0 keeps all, in the official order).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from labelfree.data.base import DataError, check_options, resize_images, set_channels
from labelfree.data.download import FileSpec
from labelfree.data.formats import read_cifar_archive, read_idx, read_svhn_mat
from labelfree.data.splits import subsample
from labelfree.seeds import rng
from labelfree.store import ImageSet

MNIST_MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "http://yann.lecun.com/exdb/mnist/",
)
FASHION_MIRRORS = ("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",)

_IDX_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}

# md5 checksums as in torchvision/datasets/mnist.py (MNIST.resources, FashionMNIST.resources).
_MNIST_MD5 = {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
}
_FASHION_MD5 = {
    "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
    "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
    "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
    "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310",
}

# md5 of the decompressed IDX files (the same bytes whatever gzip wrote the archive), used to
# accept re-compressed copies (download.verify_file). MNIST: the md5s of the uncompressed files
# of yann.lecun.com, recomputed from the real files here
# (`zcat f.gz | md5sum`) and matching the tables of other public MNIST loaders. Fashion-MNIST:
# the uncompressed files' md5s as public loaders list them beside torchvision's .gz md5s (a
# `raw_data` table) and as `md5sum` prints them after `gunzip` in MindSpore's tutorial; not
# recomputed here (no Fashion-MNIST files on this machine).
MNIST_CONTENT_MD5 = {
    "train-images-idx3-ubyte.gz": "6bbc9ace898e44ae57da46a324031adb",
    "train-labels-idx1-ubyte.gz": "a25bea736e30d166cdddb491f175f624",
    "t10k-images-idx3-ubyte.gz": "2646ac647ad5339dbf082846283269ea",
    "t10k-labels-idx1-ubyte.gz": "27ae3e4e09519cfbb04c329615203637",
}
FASHION_CONTENT_MD5 = {
    "train-images-idx3-ubyte.gz": "f4a8712d7a061bf5bd6d2ca38dc4d50a",
    "train-labels-idx1-ubyte.gz": "9018921c3c673c538a1fc5bad174d6f9",
    "t10k-images-idx3-ubyte.gz": "8181f5470baa50b63fa0f6fddb340f0a",
    "t10k-labels-idx1-ubyte.gz": "15d484375f8d13e6eb1aabb0c3f46965",
}


def _idx_specs(
    mirrors: tuple[str, ...], md5: Mapping[str, str], content: Mapping[str, str]
) -> list[FileSpec]:
    return [
        FileSpec(n, tuple(m + n for m in mirrors), md5=h, content_md5=content[n])
        for n, h in md5.items()
    ]


FILES: dict[str, list[FileSpec]] = {
    "mnist": _idx_specs(MNIST_MIRRORS, _MNIST_MD5, MNIST_CONTENT_MD5),
    "fashion_mnist": _idx_specs(FASHION_MIRRORS, _FASHION_MD5, FASHION_CONTENT_MD5),
    # torchvision/datasets/cifar.py: CIFAR10.tgz_md5, CIFAR100.tgz_md5
    "cifar10": [
        FileSpec(
            "cifar-10-python.tar.gz",
            ("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",),
            md5="c58f30108f718f92721af3b95e74349a",
        )
    ],
    "cifar100": [
        FileSpec(
            "cifar-100-python.tar.gz",
            ("https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",),
            md5="eb9058c3a382ffc7106e4002c42a8d85",
        )
    ],
    # torchvision/datasets/svhn.py: SVHN.split_list
    "svhn": [
        FileSpec(
            "train_32x32.mat",
            ("http://ufldl.stanford.edu/housenumbers/train_32x32.mat",),
            md5="e26dedcc434d2e4c54c9b2d4a06d8373",
        ),
        FileSpec(
            "test_32x32.mat",
            ("http://ufldl.stanford.edu/housenumbers/test_32x32.mat",),
            md5="eb5a983be6a315427106f1b164d9cef3",
        ),
        FileSpec(
            "extra_32x32.mat",
            ("http://ufldl.stanford.edu/housenumbers/extra_32x32.mat",),
            md5="a93ce644f1a588dc4d68dda5feec44a7",
        ),
    ],
}

OFFICIAL_SPLITS = {
    "mnist": ("train", "test"),
    "fashion_mnist": ("train", "test"),
    "cifar10": ("train", "test"),
    "cifar100": ("train", "test"),
    "svhn": ("train", "test", "extra"),
}

#: Defaults of ``datasets.<name>.options`` for these sources (mirrored in the schema).
IMAGE_OPTIONS: dict[str, Any] = {"channels": 0, "size": 0}
CIFAR100_OPTIONS: dict[str, Any] = {**IMAGE_OPTIONS, "labels": "fine"}

FASHION_CLASSES = [
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
]  # fmt: skip


def files_needed(source: str, splits: Mapping[str, float]) -> list[FileSpec]:
    """The files a dataset needs for the splits it asks for (SVHN fetches only those splits)."""
    check_split_names(source, splits)
    if source == "svhn":
        return [f for f in FILES["svhn"] if f.name.split("_")[0] in splits]
    return list(FILES[source])


def check_split_names(source: str, splits: Mapping[str, float]) -> None:
    bad = sorted(set(splits) - set(OFFICIAL_SPLITS[source]))
    if bad:
        raise DataError(
            f"source {source}: unknown split(s) {bad}; its official splits are "
            f"{list(OFFICIAL_SPLITS[source])} (the fraction says how much of each to keep)"
        )


def _read_official(
    source: str, folder: Path, split: str, opts: Mapping[str, Any], cache: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray]:
    """(x NHWC uint8, y int64) of one official split; CIFAR archives are decoded once."""
    if source in ("mnist", "fashion_mnist"):
        img_name, lab_name = _IDX_FILES[split]
        x = read_idx(folder / img_name)
        y = read_idx(folder / lab_name).astype(np.int64)
        if x.ndim != 3 or x.dtype != np.uint8 or y.ndim != 1 or len(x) != len(y):
            raise DataError(
                f"{folder / img_name}: images {x.shape} {x.dtype} do not match labels {y.shape}"
            )
        return x[..., None], y
    if source in ("cifar10", "cifar100"):
        if "parts" not in cache:
            key = "labels" if source == "cifar10" else f"{opts['labels']}_labels"
            cache["parts"], cache["classes"] = read_cifar_archive(
                folder / FILES[source][0].name, source, key
            )
        return cache["parts"][split]
    if source == "svhn":
        return read_svhn_mat(folder / f"{split}_32x32.mat")
    raise DataError(f"unknown classic source {source}")


def _options(source: str, name: str, cfg: Mapping[str, Any]) -> dict[str, Any]:
    where = f"datasets.{name}.options"
    defaults = CIFAR100_OPTIONS if source == "cifar100" else IMAGE_OPTIONS
    opts = check_options(cfg.get("options", {}) or {}, defaults, where)
    if opts["channels"] not in (0, 1, 3):
        raise DataError(f"{where}.channels: value {opts['channels']!r} must be 0 (native), 1 or 3")
    if not isinstance(opts["size"], int) or opts["size"] < 0:
        raise DataError(f"{where}.size: value {opts['size']!r} must be an integer >= 0")
    if source == "cifar100" and opts["labels"] not in ("fine", "coarse"):
        raise DataError(f"{where}.labels: value {opts['labels']!r} must be 'fine' or 'coarse'")
    return opts


Built = tuple[dict[str, ImageSet], dict[str, Any]]


def make_builder(source: str) -> Callable[[str, Mapping[str, Any], int], Built]:
    """A registry builder for one classic source: returns (splits, {"classes": names})."""

    def build(name: str, cfg: Mapping[str, Any], seed: int) -> Built:
        opts = _options(source, name, cfg)
        check_split_names(source, cfg["splits"])
        folder = Path(cfg.get("root", "resources/data")) / source
        out, cache = {}, {}
        for split, fraction in cfg["splits"].items():
            x, y = _read_official(source, folder, split, opts, cache)
            idx = subsample(y, fraction, rng(seed, "data", name, split))
            x = resize_images(set_channels(x[idx], opts["channels"]), opts["size"])
            out[split] = ImageSet(x=np.ascontiguousarray(x), y=y[idx])
        if source in ("mnist", "svhn"):
            names = [str(d) for d in range(10)]
        elif source == "fashion_mnist":
            names = list(FASHION_CLASSES)
        else:
            names = cache["classes"]
        return out, {"classes": names}

    build.__doc__ = f"Build the configured official splits of {source} from {{root}}/{source}/."
    return build
