"""The rule library and its DSL.

    from eqsat_rules.dsl import rewrite, tensor, ints, cat, narrow, relu
    x = tensor("x"); d, a, n = ints("d a n")
    rules.register(rewrite("narrow_relu", narrow(relu(x), d, a, n), relu(narrow(x, d, a, n))))

The library's names load on first use: the library imports egglog (~1 s), which a compile served
from the cache (``eqsat_torch.cache``) never needs.
"""
import importlib

from eqsat_rules.compile import RuleError

_LIBRARY = ("all_rules", "builtin_rules", "register", "select", "unregister", "validate")


def __getattr__(name):
    if name in _LIBRARY:
        return getattr(importlib.import_module(".library", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check(rule, **kw):
    """Compare a DSL rule's pattern and replacement on random instances (see ``eqsat_rules.checker``)."""
    from eqsat_rules.checker import check as _check  # torch is imported only when a rule is checked
    return _check(rule, **kw)


__all__ = ["RuleError", "all_rules", "builtin_rules", "check", "register", "select", "unregister", "validate"]
