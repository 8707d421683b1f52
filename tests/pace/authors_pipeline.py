"""Our transliteration of the authors' end-to-end selection (pace2019/pace at 09287f7,
``mnist_cifar_imagenet_svhn/selection.py`` ``__main__`` + ``get_std1`` + ``get_ds`` and
``mmd_critic/{data,mmd,run_digits_new}.py``), in float64 throughout: the oracle for whole
PACE selections without reduction (the authors' LeNet-4/5 and mutant subjects).
"""

from __future__ import annotations

import math
import warnings

import numpy as np


def authors_greedy_protos(dense: np.ndarray, m: int, gamma: float = 0.026) -> np.ndarray:
    """``run(...)``: L2-normalise rows, ``rbf_kernel``, ``greedy_select_protos`` (dense K)."""
    from sklearn import preprocessing
    from sklearn.metrics.pairwise import rbf_kernel

    k = rbf_kernel(preprocessing.normalize(dense, norm="l2"), gamma=gamma)
    n = len(k)
    colsum = 2 * np.sum(k, axis=0) / n
    selected = np.array([], dtype=int)
    for _ in range(m):
        candidates = np.setdiff1d(range(n), selected)
        s1 = colsum[candidates]
        if len(selected) > 0:
            s2 = np.sum(k[selected, :][:, candidates], axis=0) * 2 + np.diagonal(k)[candidates]
            s1 = s1 - s2 / (len(selected) + 1)
        else:
            s1 = s1 - np.abs(np.diagonal(k)[candidates])
        selected = np.append(selected, candidates[np.argmax(s1)])
    return selected


def authors_selection(features: np.ndarray, n: int, min_cluster_size: int, min_samples: int = 4,
                      alpha: float = 0.8) -> list[int]:
    """Indices the authors' script labels for budget ``n`` (sorted), features scaled in float64."""
    import hdbscan
    from sklearn.preprocessing import MinMaxScaler

    dense = MinMaxScaler().fit_transform(np.asarray(features, dtype=np.float64))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = hdbscan.HDBSCAN(min_cluster_size=min_cluster_size, min_samples=min_samples).fit(dense)
    labels = r.labels_
    label_noise = [i for i, lab in enumerate(labels) if lab == -1]
    res: dict[int, list[int]] = {}
    for i, lab in enumerate(labels):
        if lab != -1:
            res.setdefault(lab, []).append(i)
    noise = dense[label_noise]
    dis = np.zeros((len(noise), len(noise)))
    for i in range(len(noise)):
        for j in range(len(noise)):
            if j != i:
                dis[i][j] = math.sqrt(np.power(noise[i] - noise[j], 2).sum())
    noise_score = np.array([s for i, s in enumerate(r.outlier_scores_) if labels[i] == -1])
    first_noise = np.argsort(-noise_score)[0]
    res_get_s = {key: authors_greedy_protos(dense[idx], min(len(idx), 180)) for key, idx in res.items()}
    # get_std1 (the released ART loop; maxnum never updated)
    len_noise = n * (1 - alpha)
    picked = [label_noise[first_noise], label_noise[np.argmax(dis[first_noise])]]
    pre_num = [first_noise, int(np.argmax(dis[first_noise]))]
    while len(picked) < len_noise:
        mins = []
        for i in range(len(label_noise)):
            if i not in set(pre_num):
                info = [float("inf"), 0, 0]
                for lab in pre_num:
                    if dis[i][lab] < info[0]:
                        info = [dis[i][lab], i, lab]
                mins.append(info)
        picked.append(label_noise[mins[0][1]])
        pre_num.append(mins[0][1])
        for info in mins:
            if info[0] > 0:
                picked[-1] = label_noise[info[1]]
                pre_num[-1] = info[1]
    # get_ds
    sample_size = n * alpha
    len_nonnoise = len(features) - len(label_noise)
    for key, idx in res.items():
        if len(idx) > len_nonnoise / sample_size:
            count = int(round(len(idx) / (len_nonnoise / sample_size)))
        else:
            count = 1
        picked.extend(idx[res_get_s[key][c]] for c in range(count))
    return sorted(int(i) for i in picked)
