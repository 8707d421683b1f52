"""Bundles (labelfree.zoo.bundle, docs/zoo.md): a stable model -> job assignment."""

from __future__ import annotations

import hashlib

import pytest

from labelfree.zoo.bundle import BundleError, assign_bundles, hash_bundle

MODELS = [f"mlp-w{w}-s{s}" for w in (16, 32, 64) for s in range(10)]


def test_settings_model_zoo_and_count():
    assert assign_bundles("z", MODELS[:3], "model") == {m: [m] for m in MODELS[:3]}
    assert assign_bundles("z", MODELS, "zoo") == {"all": MODELS}
    assert assign_bundles("z", MODELS, 1) == {"all": MODELS}
    bundles = assign_bundles("z", MODELS, 4)
    assert sorted(m for ms in bundles.values() for m in ms) == sorted(MODELS)
    assert set(bundles) <= {f"b{k}of4" for k in range(4)}
    for ms in bundles.values():  # sheet order kept inside a bundle
        assert ms == [m for m in MODELS if m in ms]


def test_bundle_is_sha1_of_the_id_modulo_the_count():
    # hand computation: the first 8 bytes of sha1("mlp-w16-s0"), big-endian, modulo 4
    digest = hashlib.sha1(b"mlp-w16-s0").digest()
    assert hash_bundle("mlp-w16-s0", 4) == int.from_bytes(digest[:8], "big") % 4


def test_adding_or_removing_a_row_changes_only_its_bundle():
    before = assign_bundles("z", MODELS, 5)
    added = assign_bundles("z", [*MODELS[:7], "new-model", *MODELS[7:]], 5)
    changed = {b for b in set(before) | set(added) if before.get(b) != added.get(b)}
    assert changed == {f"b{hash_bundle('new-model', 5)}of5"}
    removed = assign_bundles("z", MODELS[1:], 5)
    changed = {b for b in set(before) | set(removed) if before.get(b) != removed.get(b)}
    assert changed == {f"b{hash_bundle(MODELS[0], 5)}of5"}
    # reordering rows changes no bundle's membership
    shuffled = assign_bundles("z", MODELS[::-1], 5)
    assert {b: sorted(ms) for b, ms in shuffled.items()} == {
        b: sorted(ms) for b, ms in before.items()
    }


@pytest.mark.parametrize("bad", [0, -2, "all", 2.5, True])
def test_bad_setting_is_named(bad):
    with pytest.raises(BundleError, match=r"zoos\.z\.bundle"):
        assign_bundles("z", MODELS, bad)
