"""Trivially safe rules: each one is an identity that holds for every shape it matches."""
from .dsl import (cat, contiguous, gather, iota, ints, ivecs, narrow, permute, reshape, rewrite,
                  squeeze, stack, tensor, unsqueeze)

x = tensor("x")
d, n = ints("d n")
s, t, p, q = ivecs("s t p q")


def _r(name, lhs, rhs, *when, doc=""):
    return rewrite(name, lhs, rhs, when, family="algebra", doc=doc)


BASIC_DSL = [
    _r("cat_single", cat([x], d), x),
    _r("stack_single", stack([x], d), unsqueeze(x, d)),
    _r("view_view", reshape(reshape(x, s), t), reshape(x, t)),
    _r("view_noop", reshape(x, s), x, s == x.shape),
    _r("permute_permute", permute(permute(x, p), q), permute(x, gather(p, q))),
    _r("permute_identity", permute(x, p), x, p == iota(p.len())),
    _r("squeeze_unsqueeze", squeeze(unsqueeze(x, d), d), x),
    _r("unsqueeze_squeeze", unsqueeze(squeeze(x, d), d), x),
    _r("contiguous_idem", contiguous(contiguous(x)), contiguous(x)),
    _r("narrow_full", narrow(x, d, 0, n), x, n == x.shape[d]),
]
