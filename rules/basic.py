"""Trivially safe rules: each one is an identity that holds for every shape it matches."""
from eqsat_rules.dsl import (
    cat,
    contiguous,
    gather,
    iota,
    ints,
    ivecs,
    narrow,
    permute,
    reshape,
    rewrite,
    squeeze,
    stack,
    tensor,
    unsqueeze,
)

x = tensor("x")
d, n = ints("d n")
s, t, p, q = ivecs("s t p q")


def algebra_rule(name, lhs, rhs, *when, doc=""):
    """A rewrite of the algebra family: these identities and rules/algebra.py's commutations."""
    return rewrite(name, lhs, rhs, when, family="algebra", doc=doc)


BASIC_DSL = [
    algebra_rule("cat_single", cat([x], d), x),
    algebra_rule("stack_single", stack([x], d), unsqueeze(x, d)),
    algebra_rule("view_view", reshape(reshape(x, s), t), reshape(x, t)),
    algebra_rule("view_noop", reshape(x, s), x, s == x.shape),
    algebra_rule("permute_permute", permute(permute(x, p), q), permute(x, gather(p, q))),
    algebra_rule("permute_identity", permute(x, p), x, p == iota(p.len())),
    algebra_rule("squeeze_unsqueeze", squeeze(unsqueeze(x, d), d), x),
    algebra_rule("unsqueeze_squeeze", unsqueeze(squeeze(x, d), d), x),
    algebra_rule("contiguous_idem", contiguous(contiguous(x)), contiguous(x)),
    algebra_rule("narrow_full", narrow(x, d, 0, n), x, n == x.shape[d]),
]
