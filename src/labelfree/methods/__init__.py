"""Registry of label-free and few-label methods on arrays (docs/methods.md).

``labelfree.methods.registry.call(kind, name, probs, ...)`` runs one method and
``labelfree.methods.registry.methods(kind)`` lists them; the array conventions are in
:mod:`labelfree.methods.arrays`. The study packages (laf, pace, syp, ...) never import this
package; their methods are registered in :mod:`labelfree.methods.registry`.
"""
