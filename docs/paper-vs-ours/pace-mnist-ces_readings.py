"""CES's two bin readings (docs/pace.md, reading R10) on PACE subjects 4-6: the authors' LeNet-5
mutants (pace2019/pace at 09287f7, Keras 2 HDF5) on the real MNIST test set, LHL = the output of
``model.layers[-3]`` as the authors' and Li et al.'s scripts take it, 20 edges, budgets 50..180
by 10, 50 repetitions (seed 7). Prints mean "MSE" (RMSE in points) over budgets and the mean bias.

    KERAS_BACKEND=torch python docs/paper-vs-ours/pace-mnist-ces_readings.py 50 MNIST_DIR MODELS_DIR

Output of one run: docs/paper-vs-ours/pace-mnist-ces_readings.md.
"""
import gzip
import os
import sys
import time

import numpy as np

from labelfree.pace.baselines import ces, ces_bins, srs

os.environ.setdefault("KERAS_BACKEND", "torch")
import keras  # noqa: E402  (after the backend is chosen)

D = sys.argv[2] if len(sys.argv) > 2 else "/work/shared/data/mnist/"
MODELS = sys.argv[3] if len(sys.argv) > 3 else "/work/shared/data/pace-models"
with gzip.open(os.path.join(D, "t10k-images-idx3-ubyte.gz")) as f:
    x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28, 1).astype("float32") / 255
with gzip.open(os.path.join(D, "t10k-labels-idx1-ubyte.gz")) as f:
    y = np.frombuffer(f.read(), np.uint8, offset=8)
budgets = list(range(50, 190, 10))
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
for sid, name in [(4, "mutant1"), (5, "mutant2"), (6, "mutant3")]:
    m = keras.models.load_model(f"{MODELS}/{name}.h5", compile=False)
    lhl = keras.Model(m.inputs, m.layers[-3].output).predict(x, batch_size=1000, verbose=0)
    lhl = np.asarray(lhl).reshape(len(x), -1)
    sc = (np.asarray(m.predict(x, batch_size=1000, verbose=0)).argmax(1) == y).astype(float)
    acc = sc.mean()
    zero = (lhl == lhl.min(0)).mean()
    print(f"subject {sid} {name} acc {100*acc:.2f} LHL {lhl.shape} share of values on the min edge {zero:.2f}", flush=True)
    for reading in ("histogram", "reference"):
        for rep in (False, True):
            t = time.time()
            est = ces(sc, ces_bins(lhl, 20, reading), budgets, reps, np.random.default_rng(7), allow_repeats=rep)
            mse = 100 * np.sqrt(((est - acc) ** 2).mean(0))
            bias = 100 * (est.mean(0) - acc)
            print(f"  CES {reading:9s} repeats={rep!s:5s} mean MSE {mse.mean():.2f} (n=50 {mse[0]:.2f}, n=180 {mse[-1]:.2f}) mean bias {bias.mean():+.2f} [{time.time()-t:.0f}s]", flush=True)
    est = srs(sc, budgets, reps, np.random.default_rng(7), allow_repeats=True)
    mse = 100 * np.sqrt(((est - acc) ** 2).mean(0))
    print(f"  SRS repeats mean MSE {mse.mean():.2f}", flush=True)
