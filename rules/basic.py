"""Trivially safe rules: each one is an identity that holds for every shape it matches."""
from eqsat.rule import Rule

_F = "algebra"


def _r(name: str, doc: str, *cmds: str) -> Rule:
    return Rule(name, _F, doc, tuple(cmds))


_PERMUTE_COMPOSE = [
    "(rewrite (Permute (Permute x p) q) (Permute x (vec-of {r})) :when ((= {n} (vec-length p)) (= {n} (vec-length q))))".format(
        n=n, r=" ".join(f"(vec-get p (vec-get q {i}))" for i in range(n)))
    for n in range(1, 7)
]
_PERMUTE_IDENTITY = [
    "(rewrite (Permute x (vec-of {ids})) x)".format(ids=" ".join(str(i) for i in range(n))) for n in range(1, 7)
]

BASIC_RULES: list[Rule] = [
    _r("cat_single", "cat([x], d) = x", "(rewrite (Cat (TCons x (TNil)) d) x)"),
    _r("stack_single", "stack([x], d) = unsqueeze(x, d)", "(rewrite (Stack (TCons x (TNil)) d) (Unsqueeze x d))"),
    _r("view_view", "reshape(reshape(x, s), t) = reshape(x, t)", "(rewrite (View (View x s) t) (View x t))"),
    _r("view_noop", "reshape(x, shape(x)) = x", "(rule ((= e (View x s)) (= s (shape x))) ((union e x)))"),
    _r("permute_permute", "x.permute(p).permute(q) = x.permute(p∘q)", *_PERMUTE_COMPOSE),
    _r("permute_identity", "x.permute(0, 1, …) = x", *_PERMUTE_IDENTITY),
    _r("squeeze_unsqueeze", "unsqueeze(x, d).squeeze(d) = x", "(rewrite (Squeeze (Unsqueeze x d) d) x)"),
    _r("contiguous_idem", "contiguous(contiguous(x)) = contiguous(x)",
       "(rewrite (Contiguous (Contiguous x)) (Contiguous x))"),
    _r("narrow_full", "narrow(x, d, 0, x.shape[d]) = x",
       "(rule ((= e (Narrow x d 0 n)) (= s (shape x)) (= n (vec-get s d))) ((union e x)))"),
    _r("split_single", "split(x, [n], d)[0] = x", "(rule ((= e (Get (Split x sizes d) 0)) (= 1 (vec-length sizes))) ((union e x)))"),
]
