"""Registry of label-free and few-label methods on arrays (scorecard spec; issue 18).

``labelfree.methods.call(kind, name, probs, ...)`` runs one method; ``methods(kind)`` lists them.
The study packages (laf, pace, syp, ...) never import this package; their methods are registered
in :mod:`labelfree.methods.registry`.
"""

from ._common import MethodInputError, accuracy, predictions, softmax, stack
from .registry import (
    CTX_KEYS,
    KINDS,
    REGISTRY,
    FewLabelRuns,
    Method,
    accuracy_from_labels,
    call,
    get,
    methods,
    missing,
)

__all__ = [
    "CTX_KEYS",
    "KINDS",
    "REGISTRY",
    "FewLabelRuns",
    "Method",
    "MethodInputError",
    "accuracy",
    "accuracy_from_labels",
    "call",
    "get",
    "methods",
    "missing",
    "predictions",
    "softmax",
    "stack",
]
