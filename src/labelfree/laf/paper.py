"""Values printed in the LaF paper (its section 5 and appendix), shown beside our results.

These are reference numbers for comparison only; no result of this project is computed from them.
"""

from __future__ import annotations

#: Tables 3 and 4, ID rows: dataset -> (Spearman LaF, Spearman CRC, Kendall LaF, Kendall CRC).
TABLE3_4_ID = {
    "MNIST": (0.89, 0.26, 0.78, 0.18),
    "Fashion-MNIST": (0.80, 0.36, 0.61, 0.35),
    "CIFAR-10": (0.99, 0.05, 0.96, 0.03),
    "iWildCam": (0.39, 0.20, 0.25, 0.19),
    "Amazon": (0.99, 0.39, 0.95, 0.29),
    "Java250": (0.96, 0.98, 0.91, 0.92),
    "C++1000": (0.95, 0.17, 0.87, 0.17),
}

#: Tables 3 and 4, natural-shift (OOD) rows, same column order.
TABLE3_4_OOD = {
    "iWildCam-OOD": (0.91, 0.35, 0.77, 0.27),
    "Amazon-OOD": (0.97, 0.36, 0.92, 0.28),
    "Java250-OOD": (0.85, 0.52, 0.83, 0.55),
}

#: Table 5 averages over the 7 ID datasets: k -> method -> Jaccard.
TABLE5_AVG = {
    1: {"Random": 0.10, "SDS": 0.15, "CES-best": 0.45, "LaF": 0.43},
    3: {"Random": 0.19, "SDS": 0.27, "CES-best": 0.46, "LaF": 0.51},
    5: {"Random": 0.28, "SDS": 0.39, "CES-best": 0.53, "LaF": 0.61},
    10: {"Random": 0.49, "SDS": 0.62, "CES-best": 0.61, "LaF": 0.76},
}

#: Tables 6 and 7, corruption averages: dataset -> (Random, SDS, CES, LaF).
TABLE6_AVG = {
    "MNIST-C": (0.62, 0.48, 0.91, 0.82),
    "Fashion-MNIST-C": (0.27, 0.27, 0.32, 0.45),
    "CIFAR-10-C": (0.90, 0.93, 0.92, 0.97),
}
TABLE7_AVG = {
    "MNIST-C": (0.53, 0.41, 0.81, 0.74),
    "Fashion-MNIST-C": (0.29, 0.28, 0.32, 0.45),
    "CIFAR-10-C": (0.77, 0.81, 0.79, 0.89),
}

#: Tables 9 and 10 (ablation, ID): dataset -> (Spearman LaF, w/o pruning, w/o optimizing,
#: Kendall LaF, w/o pruning, w/o optimizing), Kendall rows of F-MNIST/CIFAR-10 as printed.
TABLE9_10 = {
    "MNIST": (0.89, 0.88, 0.85, 0.78, 0.72, 0.77),
    "Fashion-MNIST": (0.80, 0.80, 0.77, 0.96, 0.96, 0.95),
    "CIFAR-10": (0.99, 0.98, 0.99, 0.61, 0.60, 0.61),
    "Java250": (0.96, 0.97, 0.94, 0.91, 0.86, 0.89),
    "C++1000": (0.95, 0.90, 0.94, 0.87, 0.89, 0.84),
    "iWildCam": (0.39, 0.34, 0.35, 0.25, 0.25, 0.18),
    "Amazon": (0.99, 0.95, 0.92, 0.95, 0.93, 0.91),
}

#: Table A1 (Spearman): dataset -> method -> (budget 500, 1500, 2500); None = infeasible.
TABLE_A1 = {
    "MNIST": {
        "Random": (0.89, 0.95, 0.98),
        "CES-best": (0.96, 0.97, 1.00),
        "SDS": (0.95, 0.97, 1.00),
        "LaF": (0.89, 0.89, 0.89),
    },
    "CIFAR-10": {
        "Random": (0.98, 0.99, 1.00),
        "CES-best": (0.99, 0.99, 1.00),
        "SDS": (0.99, 0.99, 0.99),
        "LaF": (0.99, 0.99, 0.99),
    },
    "Fashion-MNIST": {
        "Random": (0.77, 0.79, 0.93),
        "CES-best": (0.87, 0.86, 0.94),
        "SDS": (0.90, 0.91, 0.91),
        "LaF": (0.80, 0.80, 0.80),
    },
    "Java250": {
        "Random": (0.91, 0.96, 0.97),
        "CES-best": (0.96, 0.97, 0.99),
        "SDS": (0.95, 0.96, 0.96),
        "LaF": (0.96, 0.96, 0.96),
    },
    "C++1000": {
        "Random": (0.85, 0.91, 0.96),
        "CES-best": (0.95, 0.95, 0.96),
        "SDS": (0.96, 0.98, 0.98),
        "LaF": (0.95, 0.95, 0.95),
    },
    "iWildCam": {
        "Random": (0.36, 0.53, 0.58),
        "CES-best": (0.54, 0.60, 0.60),
        "SDS": (0.46, 0.45, None),
        "LaF": (0.39, 0.39, 0.39),
    },
    "Amazon": {
        "Random": (0.56, 0.76, 0.85),
        "CES-best": (0.75, 0.85, 0.93),
        "SDS": (0.56, 0.79, 0.86),
        "LaF": (0.99, 0.99, 0.99),
    },
}
TABLE_A1_BUDGETS = (500, 1500, 2500)
