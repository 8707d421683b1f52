"""keras rows: small Keras models built here, saved as Keras 2-style HDF5 and as .keras, loaded
through a sheet and run through the inference path (Keras 3 on its torch backend)."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")
pytest.importorskip("h5py")
if keras.backend.backend() != "torch":
    pytest.skip("Keras runs on another backend in this process", allow_module_level=True)

from labelfree.inference import predict  # noqa: E402
from labelfree.zoo.io import load_model  # noqa: E402
from labelfree.zoo.local import build_bundle  # noqa: E402
from labelfree.zoo.pretrained import resolve_row  # noqa: E402
from labelfree.zoo.sheet import build_sheet  # noqa: E402
from labelfree.zoo.sources import SourceError  # noqa: E402


def _lenet(separate_softmax: bool = False):
    """A LeNet-like net as the PACE authors' files hold it: conv, separate ReLU, pool, dense."""
    keras.utils.set_random_seed(0)
    inp = keras.Input((8, 8, 1), name="img")
    x = keras.layers.Conv2D(4, 3, padding="same", name="conv1")(inp)
    x = keras.layers.Activation("relu", name="relu1")(x)
    x = keras.layers.MaxPooling2D(2, name="pool1")(x)
    x = keras.layers.Flatten(name="flat")(x)
    x = keras.layers.Dense(12, activation="relu", name="hidden")(x)
    if separate_softmax:
        x = keras.layers.Dense(10, name="logits")(x)
        out = keras.layers.Activation("softmax", name="prob")(x)
    else:
        out = keras.layers.Dense(10, activation="softmax", name="logits")(x)
    return keras.Model(inp, out)


def _softmax(z):
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def _row(path, **kw):
    return {"model": "k", "source": "keras", "arch": "mlp", "weights": str(path),
            "preprocessing": "scale01", "class_subset": "", **kw}


@pytest.mark.parametrize(("suffix", "separate"), [(".h5", False), (".keras", True)])
def test_keras_model_through_a_sheet(tmp_path, digits_small, suffix, separate):
    """A sheet row loads the file; our logits' softmax is Keras' probabilities, the features
    are the first layer after its activation and the head's input (the last hidden layer)."""
    model = _lenet(separate)
    model.save(tmp_path / f"lenet{suffix}")
    (tmp_path / "zoo.tsv").write_text(f"model\tsource\tweights\nlenet\tkeras\tlenet{suffix}\n")
    sheet = build_sheet("z", {"sheet": "zoo.tsv"}, tmp_path)
    x, y = digits_small
    ids = tmp_path / "id.npz"
    from labelfree.store import write_image_set

    write_image_set(ids, x, y)
    (meta,) = build_bundle("z", sheet.to_dict("records"), [tmp_path / "m"], None, ids, 0.1, 0)
    assert (meta["keras_first"], meta["keras_head"], meta["num_classes"]) == ("relu1", "logits", 10)
    loaded, meta = load_model(tmp_path / "m")
    out = predict(loaded, x[:50], meta["preprocessing"], batch_size=16, device="cpu",
                  features=["first", "penultimate"])
    probs = model.predict(x[:50] / 255.0, verbose=0)
    np.testing.assert_allclose(_softmax(out["logits"].astype(np.float64)), probs, atol=1e-6)
    first = keras.Model(model.inputs, model.get_layer("relu1").output).predict(x[:50] / 255.0,
                                                                                verbose=0)
    hidden = keras.Model(model.inputs, model.get_layer("hidden").output).predict(x[:50] / 255.0,
                                                                                  verbose=0)
    np.testing.assert_allclose(out["first"], first.reshape(50, -1), atol=1e-6)
    np.testing.assert_allclose(out["penultimate"], hidden, atol=1e-6)


def test_vector_input_model(tmp_path, digits_small):
    """A model whose input is a flat vector (an MLP of the papers) gets the image flattened."""
    keras.utils.set_random_seed(1)
    inp = keras.Input((64,))
    h = keras.layers.Dense(8, activation="relu", name="h")(inp)
    model = keras.Model(inp, keras.layers.Dense(10, activation="softmax", name="o")(h))
    model.save(tmp_path / "mlp.h5")
    meta = resolve_row("z", _row(tmp_path / "mlp.h5"), tmp_path / "m", in_shape=(8, 8, 1))
    loaded, _ = load_model(tmp_path / "m")
    x = digits_small[0][:20]
    out = predict(loaded, x, meta["preprocessing"], device="cpu")
    probs = model.predict(x.reshape(20, -1) / 255.0, verbose=0)
    np.testing.assert_allclose(_softmax(out["logits"].astype(np.float64)), probs, atol=1e-6)


class Custom(keras.layers.Layer):
    def call(self, x):
        return x * 2


def test_bad_files_get_one_line(tmp_path):
    (tmp_path / "text.h5").write_text("not a model")
    with pytest.raises(SourceError, match=r"text.h5: not a Keras file"):
        resolve_row("z", _row(tmp_path / "text.h5"), tmp_path / "a", in_shape=(8, 8, 1))
    _lenet().save(tmp_path / "lenet.h5")
    with pytest.raises(SourceError, match=r"lenet.h5: the model's input shape \(8, 8, 1\) .* "
                                          r"does not fit the data's images 28x28x1"):
        resolve_row("z", _row(tmp_path / "lenet.h5"), tmp_path / "b", in_shape=(28, 28, 1))
    inp = keras.Input((4,))
    out = keras.layers.Dense(3, activation="softmax")(Custom(name="twice")(inp))
    keras.Model(inp, out).save(tmp_path / "custom.h5")
    with pytest.raises(SourceError, match=r"custom.h5: Keras cannot load it: .*layer type "
                                          r"'Custom' is not a Keras layer that can run here"):
        resolve_row("z", _row(tmp_path / "custom.h5"), tmp_path / "c", in_shape=(2, 2, 1))
    inp = keras.Input((8, 8, 1))
    conv = keras.layers.Conv2D(10, 8, name="conv")(inp)
    keras.Model(inp, keras.layers.Flatten()(conv)).save(tmp_path / "nohead.h5")
    with pytest.raises(SourceError, match=r"nohead.h5: the last layer with weights, 'conv', is a "
                                          "Conv2D, not the Dense classifier head"):
        resolve_row("z", _row(tmp_path / "nohead.h5"), tmp_path / "d", in_shape=(8, 8, 1))
