"""Seed-block shards of an experiment (issue 16, alpha-trimming bullet 2): pipeline.train_block
and merge_blocks give the zoo.npz and runs table of one train_experiment job, byte for byte
(both runs on this machine). The workflow side is tests/workflow/test_alphatrim_shards.py."""

from __future__ import annotations

import copy

import pytest

from labelfree.alphatrim.plan import block_name, experiment_blocks
from labelfree.alphatrim.run import merge_blocks, train_block, train_experiment
from tests.alphatrim.test_pipeline import SOURCES


def test_blocks_cut_each_zoo_into_consecutive_seeds():
    cfg = {**SOURCES, "models_per_job": 3}  # S_init 4, S_batch 4, S_all 6, E1_all 8
    assert experiment_blocks(cfg) == [
        ("S_init", 0, 3), ("S_init", 3, 4), ("S_batch", 0, 3), ("S_batch", 3, 4),
        ("S_all", 0, 3), ("S_all", 3, 6), ("E1_all", 0, 3), ("E1_all", 3, 6), ("E1_all", 6, 8)]
    assert experiment_blocks(SOURCES) == []  # models_per_job absent: one job
    assert experiment_blocks({**SOURCES, "models_per_job": 0}) == []
    # a block depends on its index and the block size only: growing S_all keeps [0, 3), [3, 6)
    grown = copy.deepcopy(cfg)
    grown["regimes"]["S_all"] = 8
    assert [b for b in experiment_blocks(grown) if b[0] == "S_all"] == [
        ("S_all", 0, 3), ("S_all", 3, 6), ("S_all", 6, 8)]
    assert block_name("S_all", 3, 6) == "S_all-00003-00006"


def test_cnn_blocks_hold_whole_trainer_groups():
    """Grouped convolutions of another group count round differently (measured: up to 3e-7 in
    the logits), so CNN shards must be multiples of the trainer's 16-model groups."""
    cnn = copy.deepcopy(SOURCES)
    cnn["model"]["arch"] = "cnn"
    with pytest.raises(ValueError, match="multiple of 16"):
        experiment_blocks({**cnn, "models_per_job": 10})
    assert experiment_blocks({**cnn, "models_per_job": 32})[0] == ("S_init", 0, 4)


@pytest.mark.parametrize("size", [1, 3])
def test_merged_blocks_equal_one_job(tmp_path, size):
    cfg = {**SOURCES, "models_per_job": size}
    train_experiment("t", SOURCES, 3, {}, tmp_path / "one.npz", tmp_path / "one.csv")
    paths = []
    for zoo, start, stop in experiment_blocks(cfg):
        paths.append(tmp_path / f"{block_name(zoo, start, stop)}.npz")
        # a block job sees only what its models depend on (workflow/rules/alphatrim.smk)
        part = {k: cfg[k] for k in ("kind", "data", "model", "curves")}
        train_block("t", part, 3, {}, zoo, start, stop, paths[-1])
    merge_blocks("t", cfg, paths, tmp_path / "merged.npz", tmp_path / "merged.csv")
    assert (tmp_path / "merged.npz").read_bytes() == (tmp_path / "one.npz").read_bytes()
    assert (tmp_path / "merged.csv").read_bytes() == (tmp_path / "one.csv").read_bytes()

    # a missing or out-of-order shard is refused, never merged into a shorter zoo
    with pytest.raises(ValueError, match="not the planned blocks"):
        merge_blocks("t", cfg, paths[:-1], tmp_path / "x.npz", tmp_path / "x.csv")
    with pytest.raises(ValueError, match="not the planned blocks"):
        merge_blocks("t", cfg, paths[::-1], tmp_path / "x.npz", tmp_path / "x.csv")
