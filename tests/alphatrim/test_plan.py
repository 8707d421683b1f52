"""labelfree.alphatrim.plan: the experiments' jobs and the config checks, at parse time."""

from __future__ import annotations

import copy

import pytest

from labelfree.alphatrim.plan import plan, skip_reason
from labelfree.config import ConfigError
from labelfree.data.registry import known_num_classes
from tests.alphatrim.test_pipeline import SOURCES

ZOOS = {"zoo_a": {"dataset": "digits"}, "zoo_b": {"dataset": "digits_eo"}}
DATASETS = {"digits": {"source": "digits"},
            "digits_eo": {"source": "digits", "options": {"binary": "even_odd"}}}
OWN = {"kind": "sources", "data": {"source": "zoos", "zoos": {"S_all": "zoo_b"}, "testset": "id"},
       "ensembles": {"sizes": []}}


def test_plan_lists_outputs_and_blocks_of_each_experiment():
    exp = copy.deepcopy(SOURCES)
    p = plan({"e": exp, "own": OWN}, ZOOS, DATASETS, set(), known_num_classes)
    assert set(p.experiments) == {"e", "own"}
    assert "extra-checks" in p.outputs["e"]["tables"]
    assert p.outputs["own"] == {"tables": ["table2", "table3", "table4", "extra-checks"],
                                "figures": ["fig9", "fig10", "fig11", "fig12"]}
    assert p.blocks["own"] == []


def test_a_multi_class_spine_zoo_is_a_config_error():
    own = copy.deepcopy(OWN)
    own["data"]["zoos"]["S_all"] = "zoo_a"
    with pytest.raises(ConfigError, match=r"zoo 'zoo_a' is trained on dataset 'digits' with 10"):
        plan({"own": own}, ZOOS, DATASETS, set(), known_num_classes)
    # a prediction zoo's classes are not known from the config: left to the job
    assert plan({"own": own}, ZOOS, DATASETS, {"zoo_a"}, known_num_classes).experiments


def test_an_unplannable_experiment_is_a_config_error():
    exp = copy.deepcopy(SOURCES)
    exp["regimes"] = {"S_init": 2, "S_batch": 0, "S_all": 0}
    with pytest.raises(ConfigError, match=r"^alphatrim.experiments: .*regimes.S_init=2"):
        plan({"e": exp}, ZOOS, DATASETS, set(), known_num_classes)


def test_skip_reason():
    assert "no experiments" in skip_reason({"alphatrim": {"experiments": {}}}, {}, set())
    cfg = {"alphatrim": {"experiments": {"own": OWN}}}
    assert skip_reason(cfg, {}, set()) is None
    assert "prediction zoo(s) ['zoo_b']" in skip_reason(cfg, {}, {"zoo_b"})
