"""The Optimus split-cat family (torch/_inductor/fx_passes/split_cat.py) as rewrite rules.

Lowering already spells every pattern canonically: ``unbind`` is ``split(x, [1]*n, d)`` + ``squeeze``
(so Optimus' *merge_split_squeeze* holds by construction), ``chunk`` is a split, ``x[a:b]`` a narrow.
"All pieces", "equal sections" and "each piece squeezed / reshaped" are DSL list patterns and guards;
a shuffled order or a missing piece never matches them. Pieces used elsewhere too stay available:
the e-graph keeps both forms and extraction decides.
"""
from eqsat_rules.dsl import (
    cat,
    ints,
    ivecs,
    movedim,
    pieces,
    repeat,
    reshape,
    rewrite,
    splice,
    split,
    squeeze,
    stack,
    tensor,
)

x = tensor("x")
s, t = ivecs("s t")
c, d, e, i, j = ints("c d e i j")
S = split(x, s, d)
n, k = s.len(), s[0]
equal = s == repeat(n, k)                            # every section has size k
unbound = pieces(S, each=lambda p: squeeze(p, d))    # x.unbind(d), as lowering spells it
unflat = reshape(x, splice(x.shape, d, [n, k]))      # x.unflatten(d, (n, k)): piece index at d


def _r(name, lhs, rhs, *when, doc="", given=()):
    return rewrite(name, lhs, rhs, when, family="split_cat", doc=doc, given=given)


SPLIT_CAT_DSL = [
    _r("split_single", S[0], x, n == 1,
       doc="remove_split_with_size_one: a split into one section is its input"),
    _r("merge_splits", split(S[i], t, d)[j], split(x, splice(s, i, t), d)[i + j],
       doc="merge_splits: a split of a split piece on the same dim is one split of the input"),
    # ... and the outer split's other pieces are pieces of the merged split too, so it can die
    _r("merge_splits_before", S[j], split(x, splice(s, i, t), d)[j], j < i, given=[split(S[i], t, d)],
       doc="merge_splits: a piece before the re-split one is the same piece of the merged split"),
    _r("merge_splits_after", S[j], split(x, splice(s, i, t), d)[j + t.len() - 1], j > i, given=[split(S[i], t, d)],
       doc="merge_splits: a piece after the re-split one is shifted by the re-split's extra pieces"),
    _r("cat_split_all", cat(pieces(S), d), x,
       doc="mutate_cat / split_cat: cat of every piece, in order, on the split dim is the input"),
    _r("cat_split_other_dim", cat(pieces(S), c),
       reshape(movedim(unflat, d, c), x.shape.set(d, k).set(c, n * x.shape[c])), equal, c != d,
       doc="split_cat with cat dim != split dim and equal sections: unflatten, movedim, flatten"),
    _r("stack_split_all", stack(pieces(S), e), movedim(unflat, d, e), equal,
       doc="split_stack_to_cats: stack of every equal piece is a view (+ permute) of the input"),
    _r("stack_reshaped_pieces", stack(pieces(S, each=lambda p: reshape(p, t)), e),
       movedim(reshape(movedim(unflat, d, 0), [n] + t), 0, e), equal,
       doc="move_reshape_out_of_split_stack: stack of equally reshaped equal pieces"),
    _r("unbind_stack", stack(unbound, e), movedim(x, d, e), s == repeat(n, 1),
       doc="unbind_stack: stack of every unbind piece is a movedim of the input"),
    _r("unbind_cat", cat(unbound, e),
       reshape(movedim(x, d, e), x.shape.remove(d).set(e, n * x.shape.remove(d)[e])), s == repeat(n, 1),
       doc="unbind_cat_to_view: cat of every unbind piece is movedim + flatten of the input"),
]
