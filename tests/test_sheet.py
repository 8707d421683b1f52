"""Zoo sheets: grid expansion, ids, and errors that name the zoo, row and column."""

from __future__ import annotations

import numpy as np
import pytest

from labelfree.zoo.arch import ARCHS
from labelfree.zoo.preprocess import NORMALISATIONS, preprocess
from labelfree.zoo.sheet import (
    LOCAL_ARCHS,
    OPTIMIZERS,
    PREPROCESSING,
    ZooError,
    build_sheet,
    expand_grid,
)
from labelfree.zoo.train import OPTIMIZERS as TRAIN_OPTIMIZERS


def test_grid_is_a_cartesian_product_per_family():
    rows = expand_grid([{"arch": "mlp", "width": [8, 16], "seed": [0, 1, 2]}, {"arch": "lenet"}])
    assert len(rows) == 2 * 3 + 1
    assert rows[-1] == {"arch": "lenet"}


def test_sheet_from_grid_has_unique_readable_ids():
    sheet = build_sheet("z", {"grid": [{"arch": "mlp", "width": [8, 16], "seed": [0, 1]}]})
    assert sheet["model"].is_unique
    assert sheet.loc[0, "model"] == "mlp-w8-adam-e10-f1-s0"
    assert sheet["batch_seed"].tolist() == [None] * 4


def test_sheet_file(tmp_path):
    f = tmp_path / "zoo.tsv"
    f.write_text("model\tarch\twidth\tseed\tbatch_seed\nm1\tmlp\t8\t0\t5\nm2\tlenet\t4\t1\t\n")
    sheet = build_sheet("user", {"sheet": "zoo.tsv"}, base_dir=tmp_path)
    assert sheet["model"].tolist() == ["m1", "m2"]
    assert sheet.loc[0, "batch_seed"] == 5 and sheet.loc[1, "batch_seed"] is None
    assert sheet.loc[1, "width"] == 4


@pytest.mark.parametrize(
    ("cfg", "fragment"),
    [
        ({}, "give either 'sheet'"),
        ({"grid": [{"arch": "mlp", "widht": 3}]}, "unknown column(s) ['widht']"),
        ({"grid": [{"arch": "mlp", "width": "wide"}]}, "column width='wide' is not int"),
        ({"grid": [{"data_fraction": 0.0}]}, "data_fraction=0.0 not in (0, 1]"),
        ({"grid": [{"source": "ftp"}]}, "source 'ftp' is not one of"),
        ({"grid": [{"source": "torchvision"}]}, "needs 'weights'"),
        ({"grid": [{"source": "checkpoint", "weights": "/nonexistent/x.pt"}]}, "not found"),
        ({"grid": [{"model": "a b"}]}, "may hold only letters"),
        ({"grid": [{"model": "m"}, {"model": "m"}]}, "duplicate model ids ['m']"),
        ({"sheet": "missing.tsv"}, "sheet file"),
    ],
)
def test_bad_sheets_name_the_culprit(cfg, fragment):
    with pytest.raises(ZooError) as info:
        build_sheet("z", cfg)
    assert fragment in str(info.value)
    assert "zoo 'z'" in str(info.value)


def test_cifar10_kit_preprocessing_uses_the_kit_constants():
    """syp spec 2.1: the kit normalises with mean (0.4914, 0.4822, 0.4465), std (0.2023, ...)."""
    x = np.zeros((1, 1, 1, 3), np.uint8)
    got = preprocess(x, "cifar10_kit")[0, :, 0, 0].numpy()
    np.testing.assert_allclose(got, -np.array([0.4914, 0.4822, 0.4465]) / [0.2023, 0.1994, 0.2010],
                               rtol=1e-6)


@pytest.mark.parametrize(
    ("row", "fragment"),
    [
        ({"arch": "vgg"}, "arch 'vgg' is not a local architecture"),
        ({"optimizer": "adamw"}, "optimizer 'adamw' is not one of"),
        ({"epochs": 0}, "epochs=0 must be >= 1"),
        ({"batch_size": 0}, "batch_size=0 must be >= 1"),
        ({"lr": 0.0}, "lr=0.0 must be > 0"),
        ({"width": 2.5}, "column width=2.5 is not int"),
        ({"label_map": "0-8"}, "label_map '0-8' is not 'from:to"),
        ({"preprocessing": "zscore"}, "preprocessing 'zscore' is not one of"),
    ],
)
def test_training_values_are_checked_at_parse_time(row, fragment):
    """Issue 14: values that used to fail inside the training job, after other models trained."""
    with pytest.raises(ZooError) as info:
        build_sheet("z", {"grid": [{"arch": "mlp", **row}]})
    assert "zoo 'z': row 1:" in str(info.value) and fragment in str(info.value)


def test_every_bad_row_is_named_in_one_message():
    grid = [{"arch": "mlp"}, {"arch": "vgg"}, {"arch": "mlp", "epochs": 0, "optimizer": "x"}]
    with pytest.raises(ZooError) as info:
        build_sheet("z", {"grid": grid})
    msg = str(info.value)
    assert "row 2: arch 'vgg'" in msg and "row 3: optimizer 'x'" in msg and "row 3: epochs=0" in msg
    assert "row 1" not in msg


def test_parse_time_lists_match_the_training_code():
    """The sheet copies these lists to keep torch out of parse time; they must not drift."""
    assert LOCAL_ARCHS == ARCHS and OPTIMIZERS == TRAIN_OPTIMIZERS
    assert set(PREPROCESSING) == {"scale01", "center", *NORMALISATIONS}


def test_relative_paths_resolve_against_the_config_and_sheet_folders(tmp_path, monkeypatch):
    """Issue 14: `sheet:` against the config file's folder, checkpoints against the sheet's
    (grid rows: the config's), whatever the working directory."""
    (tmp_path / "cfg" / "zoos").mkdir(parents=True)
    (tmp_path / "cfg" / "zoos" / "w.pt").write_bytes(b"x")
    (tmp_path / "cfg" / "g.pt").write_bytes(b"x")
    (tmp_path / "cfg" / "zoos" / "z.tsv").write_text("model\tsource\tweights\nm\tcheckpoint\tw.pt\n")
    monkeypatch.chdir(tmp_path)  # a working directory where neither path exists
    sheet = build_sheet("z", {"sheet": "zoos/z.tsv"}, base_dir=tmp_path / "cfg")
    assert sheet.loc[0, "weights"] == str(tmp_path / "cfg" / "zoos" / "w.pt")
    grid = build_sheet("g", {"grid": [{"source": "checkpoint", "weights": "g.pt"}]},
                       base_dir=tmp_path / "cfg")
    assert grid.loc[0, "weights"] == str(tmp_path / "cfg" / "g.pt")
