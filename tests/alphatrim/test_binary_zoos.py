"""Own zoos must be binary (issue 16, alpha-trimming bullet 4): the score is the logit gap m+ - m-
of a two-class model (spec 2.1), so an experiment with ``data.source: zoos`` whose spine zoo is
trained on a multi-class dataset is refused while Snakemake parses the config, with a message
naming the experiment, the zoo, its dataset and the class count (docs/alphatrim.md, "Zoos must
be binary"). Class counts the config alone fixes come from the data layer's sources (the 10
digits, CIFAR-10's 10 classes, CIFAR-100's 100 fine / 20 coarse labels)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

from labelfree.alphatrim.plan import non_binary_zoos
from labelfree.data.registry import known_num_classes
from tests.workflow.runner import SMOKE_CONFIG, run_snakemake

OWN = {"data": {"source": "zoos", "zoos": {"S_init": "zoo_a", "S_all": "zoo_b",
                                           "ensemble": "zoo_c"}, "testset": "id"}}


@pytest.mark.parametrize(("cfg", "k"), [
    ({"source": "digits"}, 10),
    ({"source": "digits", "options": {"binary": "even_odd"}}, 2),
    ({"source": "cifar10"}, 10),
    ({"source": "cifar100"}, 100),
    ({"source": "cifar100", "options": {"labels": "coarse"}}, 20),
    ({"source": "imagenet_val"}, 1000),
    ({"source": "imagenet_val", "options": {"synsets": "my.txt"}}, None),  # the data says
])
def test_known_num_classes_from_the_config(cfg, k):
    assert known_num_classes(cfg) == k


def test_non_binary_zoos_name_experiment_zoo_dataset_and_classes():
    classes = {"zoo_a": ("digits", 10), "zoo_b": ("digits_eo", 2), "zoo_c": ("cifar100", 100)}
    msgs = non_binary_zoos("own", OWN, classes)
    assert len(msgs) == 2  # zoo_b is binary: no message
    assert msgs[0].startswith("alphatrim.experiments.own.data.zoos.S_init: zoo 'zoo_a' is "
                              "trained on dataset 'digits' with 10 classes")
    assert msgs[1].startswith("alphatrim.experiments.own.data.zoos.ensemble: zoo 'zoo_c' is "
                              "trained on dataset 'cifar100' with 100 classes")
    assert "options.binary: even_odd" in msgs[0]
    # unknown class counts are left to the job; other sources train their own models
    assert non_binary_zoos("own", OWN, {"zoo_a": ("inet", None)}) == []
    assert non_binary_zoos("x", {"data": {"source": "dataset"}}, classes) == []


def test_workflow_refuses_a_multiclass_own_zoo_at_parse_time(tmp_path):
    """A dry run on the smoke config with an experiment reading the 10-class `digits` zoo stops
    before any job with the message (job-time checks are in test_pipeline.py)."""
    cfg = copy.deepcopy(yaml.safe_load(SMOKE_CONFIG.read_text()))
    cfg["alphatrim"]["experiments"]["own"] = {
        "data": {"source": "zoos", "zoos": {"S_all": "digits"}, "testset": "id"}}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    proc = run_snakemake(tmp_path / "run", "--dry-run", configfile=path, check=False, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-2000:]
    assert ("alphatrim.experiments.own.data.zoos.S_all: zoo 'digits' is trained on dataset "
            "'digits' with 10 classes") in out, out[-3000:]
    assert not (tmp_path / "run" / "results").exists()


def test_image_task_arrays_merges_classes_and_names_the_culprit():
    """Spec 3.2 (the paper's CIFAR-10 task): classes in ``positive`` become 1, ``negative`` 0,
    the rest are dropped; without a merge a multi-class set is refused naming where it came from
    and how to make it binary, and overlapping class lists are refused naming both."""
    from labelfree.alphatrim.run import image_task_arrays

    x = np.arange(6 * 2 * 2, dtype=np.uint8).reshape(6, 2, 2, 1)
    y = np.array([0, 1, 2, 3, 4, 5])
    xf, yb = image_task_arrays(x, y, "exp", positive=[1, 3], negative=[0, 4])
    assert yb.tolist() == [0, 1, 1, 0]  # rows of classes 0, 1, 3, 4 in order; 2 and 5 dropped
    assert xf.shape == (4, 4) and xf.dtype == np.float32
    np.testing.assert_array_equal(xf[1], x[1].reshape(-1).astype(np.float32) / np.float32(255))
    with pytest.raises(ValueError, match=r"exp: the alpha-trimming study needs a binary task.*"
                                         r"\[0, 1, 2, 3, 4, 5\].*binary: even_odd"):
        image_task_arrays(x, y, "exp")
    with pytest.raises(ValueError, match=r"exp: data.positive \[1, 3\] and data.negative \[3\]"):
        image_task_arrays(x, y, "exp", positive=[1, 3], negative=[3])
