"""The batch fusions' matchers and fused forms, read by the table in ``eqsat_rules.batch``.

A matcher maps one term of the lowered program to the keys of the groups it may join (equal shapes,
dtypes, attributes — or the same input for ``batch_linear_lhs``); a builder takes a group's members
and returns each member's piece of the batched form, let-binding the batched terms with ``bind``:

    hz3 = bmm(stack(xs, 0), permute(stack(ws, 0), [0, 2, 1]))          # Program.let
    t17 ≡ squeeze(split(hz3, [1, 1, 1], 0)[1], 0)                        # Program.same

Nothing here decides whether fusing pays: the extractor prices both forms with the Inductor-shaped
cost model, so a group of two tiny ops stays unfused. The stacks and unbinds the forms add are
ordinary ``Stack``/``Split``/``Squeeze`` terms that the split_cat rules cancel against neighbouring
splits and stacks. Matching is on terms, so Torch-IR (``linear``) and Aten-IR (``mm``/``addmm``)
graphs are covered by the same code. The lowered program is read through :class:`LoweredTerms`
(``eqsat_torch.lowering.lowered.Lowered`` is one), so this layer imports no torch.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Collection, Hashable, Iterator, Mapping, Protocol, Sequence

from eqsat.ops import CTOR_CATEGORY, Category, Ctor
from eqsat.sizes import SizeTable, product
from eqsat.terms import IVec, Ref, Term, TList

NONE = Term(Ctor.NONE, ())


class SizeEncoding(Protocol):
    """A graph's symbolic sizes: false for a static graph (then ``table`` is not read)."""

    table: SizeTable

    def __bool__(self) -> bool: ...


class LoweredTerms(Protocol):
    """What batching reads of a lowered program: each let's term (in binding order), shape and dtype,
    the lets that are outputs, those that pass no gradient, and the symbolic sizes."""

    originals: Mapping[str, Term]
    shapes: Mapping[str, tuple]
    dtypes: Mapping[str, str]
    roots: Sequence[str]
    grad_dead: Collection[str]
    sizes: SizeEncoding


@dataclass
class Ctx:
    """Shapes, dtypes and terms of the lowered program, looked up by Ref."""

    low: LoweredTerms

    def shape(self, r: Ref) -> tuple | None:
        return self.low.shapes.get(r.let)

    def dtype(self, r: Ref) -> str | None:
        return self.low.dtypes.get(r.let)

    def term(self, r: Ref) -> Term | None:
        return self.low.originals.get(r.let)

    def is_none(self, r: Ref) -> bool:
        t = self.term(r)
        return t is not None and t.ctor == Ctor.NONE

    def rows(self, shape: Sequence[int]) -> int | None:
        """The product of leading dims (a flatten's size); None when two of them are symbolic."""
        return product(shape, self.low.sizes.table if self.low.sizes else None)

    def static(self, shape: Sequence[int]) -> bool:
        """No size of ``shape`` is symbolic (padding amounts are differences of sizes)."""
        table = self.low.sizes.table if self.low.sizes else None
        return table is None or all(table.is_constant(d) for d in shape)

    def sig(self, r: Ref) -> tuple | None:
        """What must be equal for two operands to be stacked; None when unknown."""
        s, d = self.shape(r), self.dtype(r)
        return None if s is None or d is None else (s, d)

    @cached_property
    def _users(self) -> dict[str, list[str]]:
        users: dict[str, list[str]] = {}
        for let, t in self.low.originals.items():
            for src in set(refs(t)):
                users.setdefault(src, []).append(let)
        return users

    @cached_property
    def _lets(self) -> dict[int, str]:
        return {id(t): let for let, t in self.low.originals.items()}

    def ref_of(self, t: Term) -> Ref:
        """The let an original term is bound to."""
        return Ref(self._lets[id(t)])

    def feeds_fusible_only(self, r: Ref) -> bool:
        """Every use of ``r``, through views, is a pointwise op, a copy or a reduction, and it is no
        output: a matmul's bias add fuses into such users (Inductor's mm + epilogue)."""
        todo, seen = [r.let], set()
        while todo:
            let = todo.pop()
            if let in seen:
                continue
            seen.add(let)
            if let in self.low.roots:
                return False
            for u in self._users.get(let, ()):
                kind = CTOR_CATEGORY.get(self.low.originals[u].ctor)
                if kind == Category.VIEW:
                    todo.append(u)
                elif kind not in _EPILOGUE_USERS:
                    return False
        return True


_EPILOGUE_USERS = {Category.POINTWISE, Category.COPY, Category.REDUCTION, Category.NORM}


# -- term builders -----------------------------------------------------------------------------------
def _stack(xs: Sequence, d: int = 0) -> Term:
    return Term(Ctor.STACK, (TList(tuple(xs)), d))


def _cat(xs: Sequence, d: int) -> Term:
    return Term(Ctor.CAT, (TList(tuple(xs)), d))


def _view(x, shape: Sequence[int]) -> Term:
    return Term(Ctor.VIEW, (x, IVec(tuple(shape))))


def _unbind(y: Ref, n: int, d: int = 0) -> list[Term]:
    """``y.unbind(d)`` spelled the way lowering spells it, so the split_cat rules see it."""
    tup = Term(Ctor.SPLIT, (y, IVec((1,) * n), d))
    return [Term(Ctor.SQUEEZE, (Term(Ctor.GET, (tup, i)), d)) for i in range(n)]


def _split(y: Ref, sizes: Sequence[int], d: int) -> list[Term]:
    tup = Term(Ctor.SPLIT, (y, IVec(tuple(sizes)), d))
    return [Term(Ctor.GET, (tup, i)) for i in range(len(sizes))]


def _stack_at(ctx: Ctx, xs: Sequence[Ref], rank: int, d: int) -> Term:
    """Stack operands on a new dim ``d`` (0 or 1) of a rank-``rank`` computation they broadcast into:
    an operand of lower rank is first padded with leading unit dims, the way broadcasting reads it."""
    shape = ctx.shape(xs[0])
    pad = rank - len(shape)
    if pad == 0:
        return _stack(xs, d)
    st = _stack(xs)
    return st if pad == d else _view(st, (len(xs),) + (1,) * (pad - d) + shape)


def _stack_dim(rank: int) -> int:
    """Where a pointwise batch puts its new dim: 1 keeps the outer dim in front, so the CPU backend
    fuses the stack copies, the op and its consumers on one outer loop (measured: 8 tanh over
    linears then cat, 16 kernels unfused, 16 stacked on dim 0, 9 stacked on dim 1)."""
    return min(rank, 1)


Bind = Callable[[Term], Ref]  # let-binds a term, returns its Ref
# (context, members, bind, the group's key) → each member's fused piece (or a list of alternatives)
Build = Callable[[Ctx, list[Term], Bind, Hashable], list]


# -- fused forms -------------------------------------------------------------------------------------
def build_batch_linear(ctx: Ctx, ts: list[Term], bind: Bind, key: Hashable = None) -> list:
    xs, ws, bs = zip(*(t.args for t in ts))
    n, xshape = len(ts), ctx.shape(xs[0])
    k, out = xshape[-1], ctx.shape(ws[0])[0]
    x = _stack(xs) if len(xshape) == 2 else _view(_stack(xs), (n, ctx.rows(xshape[:-1]), k))
    w = Term(Ctor.PERMUTE, (_stack(ws), IVec((0, 2, 1))))
    shaped = (lambda p: p) if len(xshape) == 2 else (lambda p: _view(p, xshape[:-1] + (out,)))
    products = [shaped(p) for p in _unbind(bind(Term(Ctor.BMM, (x, w))), n)]
    if ctx.is_none(bs[0]):
        return products
    # with biases: one baddbmm of the stacked biases, or each product plus its own bias, which costs
    # no stack of the biases (a copy per bias where weights are runtime values) and fuses with its users
    summed = [shaped(p) for p in _unbind(bind(Term(Ctor.BADDBMM, (Term(Ctor.UNSQUEEZE, (_stack(bs), 1)), x, w))), n)]
    return [[s, Term(Ctor.BINARY, ("add", p, b))] for s, p, b in zip(summed, products, bs)]


def _pad(x, pads: Sequence[int]) -> object:
    return Term(Ctor.PAD, (x, IVec(tuple(pads)))) if any(pads) else x


def build_group_linear(ctx: Ctx, ts: list[Term], bind: Bind, key: Hashable = None) -> list:
    """Linears of different shapes as one bmm: zero-pad every x_i to [rows, Kmax] and W_i to
    [Nmax, Kmax], stack, multiply, narrow each output to its N_i, add its bias. The padded terms are
    0·0 or land in the rows the narrow drops, so every kept output sums exactly x_i's products."""
    xs, ws, bs = zip(*(t.args for t in ts))
    lead = ctx.shape(xs[0])[:-1]
    (n_max, k_max) = (max(ctx.shape(w)[d] for w in ws) for d in (0, 1))
    x = _stack([_pad(x if len(lead) == 1 else _view(x, (ctx.rows(lead), ctx.shape(x)[-1])),
                     (0, k_max - ctx.shape(x)[-1])) for x in xs])
    w = _stack([_pad(w, (0, k_max - ctx.shape(w)[1], 0, n_max - ctx.shape(w)[0])) for w in ws])
    pieces = _unbind(bind(Term(Ctor.BMM, (x, Term(Ctor.PERMUTE, (w, IVec((0, 2, 1))))))), len(ts))
    out = []
    for p, w, b in zip(pieces, ws, bs):
        n = ctx.shape(w)[0]
        y = p if n == n_max else Term(Ctor.NARROW, (p, 1, 0, n))
        y = y if len(lead) == 1 else _view(y, lead + (n,))
        out.append(y if ctx.is_none(b) else Term(Ctor.BINARY, ("add", y, b)))
    return out


def _build_linear_lhs(ctx: Ctx, ts: list[Term], bind: Bind, epilogue: bool) -> list[Term]:
    """One linear on the concatenated weight, split. ``epilogue``: each piece adds its own bias instead
    of one concatenated bias. Inductor splits a biased matmul whose users are pointwise into mm +
    epilogue, so the adds fuse into the pieces' consumers (the copies a 4-D matmul makes of each
    head-split piece), where a concatenated bias is one more copy a call without freezing."""
    x = ts[0].args[0]
    _, ws, bs = zip(*(t.args for t in ts))
    bias = NONE if epilogue or ctx.is_none(bs[0]) else _cat(bs, 0)
    y = bind(Term(Ctor.LINEAR, (x, _cat(ws, 0), bias)))
    pieces = _split(y, [ctx.shape(w)[0] for w in ws], len(ctx.shape(x)) - 1)
    return [Term(Ctor.BINARY, ("add", p, b)) for p, b in zip(pieces, bs)] if epilogue else pieces


def _build_mm_lhs(ctx: Ctx, ts: list[Term], bind: Bind, epilogue: bool) -> list[Term]:
    """The Aten spelling of ``_build_linear_lhs``: ``mm``s, or ``addmm``s as one ``addmm`` on the
    concatenated biases or (``epilogue``) one ``mm`` whose pieces add their own."""
    x, ws = ts[0].args[-2], [t.args[-1] for t in ts]
    cs = [t.args[0] for t in ts] if ts[0].ctor == Ctor.ADDMM else []
    if cs and not epilogue:
        y = bind(Term(Ctor.ADDMM, (_cat(cs, len(ctx.shape(cs[0])) - 1), x, _cat(ws, 1))))
    else:
        y = bind(Term(Ctor.MM, (x, _cat(ws, 1))))
    pieces = _split(y, [ctx.shape(w)[1] for w in ws], 1)
    return [Term(Ctor.BINARY, ("add", p, c)) for p, c in zip(pieces, cs)] if epilogue else pieces


def build_linear_lhs(ctx: Ctx, ts: list[Term], bind: Bind, key: Hashable) -> list[Term]:
    """``batch_linear_lhs``: the key's first entry says the spelling and whether biases are epilogues."""
    build = _build_linear_lhs if ts[0].ctor == Ctor.LINEAR else _build_mm_lhs
    return build(ctx, ts, bind, epilogue=key[0].endswith(EPILOGUE))


def build_batch_mm(ctx: Ctx, ts: list[Term], bind: Bind, key: Hashable = None) -> list:
    if ts[0].ctor == Ctor.MM:
        a, b = zip(*(t.args for t in ts))
        y = Term(Ctor.BMM, (_stack(a), _stack(b)))
    else:
        c, a, b = zip(*(t.args for t in ts))
        y = Term(Ctor.BADDBMM, (_stack_at(ctx, c, 2, 0), _stack(a), _stack(b)))
    return _unbind(bind(y), len(ts))


def build_layernorm(ctx: Ctx, ts: list[Term], bind: Bind, key: Hashable = None) -> list:
    """layer_norm(stack(x)) without affine, then the stacked affine broadcast over the batch dims;
    the new dim goes in front of the normalized dims."""
    xs, nshapes, ws, bs, eps = zip(*(t.args for t in ts))
    rank = len(ctx.shape(xs[0]))
    d = _stack_dim(rank - len(nshapes[0].items))
    y = Term(Ctor.LAYER_NORM, (_stack(xs, d), nshapes[0], NONE, NONE, eps[0]))
    if not ctx.is_none(ws[0]):
        y = Term(Ctor.BINARY, ("mul", y, _stack_at(ctx, ws, rank, d)))
    if not ctx.is_none(bs[0]):
        y = Term(Ctor.BINARY, ("add", y, _stack_at(ctx, bs, rank, d)))
    return _unbind(bind(y), len(ts), d)


def build_unary(ctx: Ctx, ts: list[Term], bind: Bind, key: Hashable = None) -> list:
    d = _stack_dim(len(ctx.shape(ts[0].args[1])))
    return _unbind(bind(Term(Ctor.UNARY, (ts[0].args[0], _stack([t.args[1] for t in ts], d)))), len(ts), d)


def build_binary(ctx: Ctx, ts: list[Term], bind: Bind, key: Hashable = None) -> list:
    """Operands that are the same Ref in every member are not stacked: they broadcast over the
    batch dim (a full-rank one gets a unit dim there); the others are stacked."""
    key = ts[0].args[0]
    rank = max(len(ctx.shape(ts[0].args[k])) for k in (1, 2))
    d = _stack_dim(rank)
    ops = []
    for k in (1, 2):
        side = [t.args[k] for t in ts]
        if len(set(side)) > 1:
            ops.append(_stack_at(ctx, side, rank, d))
        elif len(ctx.shape(side[0])) > rank - d:
            ops.append(Term(Ctor.UNSQUEEZE, (side[0], d)))
        else:
            ops.append(side[0])
    return _unbind(bind(Term(Ctor.BINARY, (key, *ops))), len(ts), d)




# -- matchers: term → the keys of the groups it may join ----------------------------------------------
Match = Callable[[Ctx, Term], Iterator[Hashable]]
FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})
EPILOGUE = "+epilogue"  # a batch_linear_lhs key whose pieces add their own bias


def _linear_sigs(ctx: Ctx, t: Term) -> tuple | None:
    """(input, weight, bias) signatures of a linear whose operands are all known (bias None: none)."""
    x, w, b = t.args
    xs, ws = ctx.sig(x), ctx.sig(w)
    bias = None if ctx.is_none(b) else ctx.sig(b)
    if xs is None or ws is None or len(ws[0]) != 2 or (bias is None) != ctx.is_none(b):
        return None
    return xs, ws, bias


def match_batch_linear(ctx: Ctx, t: Term) -> Iterator[Hashable]:
    sigs = _linear_sigs(ctx, t)
    if sigs is not None and len(sigs[0][0]) >= 2 and ctx.rows(sigs[0][0][:-1]) is not None:
        yield sigs


def match_group_linear(ctx: Ctx, t: Term) -> Iterator[Hashable]:
    sigs = _linear_sigs(ctx, t)
    if sigs is None:
        return
    xs, ws, bias = sigs
    if (len(xs[0]) >= 2 and ctx.rows(xs[0][:-1]) is not None and xs[1] in FLOAT_DTYPES and ws[1] == xs[1]
            and bias in (None, ((ws[0][0],), xs[1])) and ctx.static(ws[0])):
        yield xs[0][:-1], xs[1], bias is None


def match_linear_lhs(ctx: Ctx, t: Term) -> Iterator[Hashable]:
    """Both spellings where the bias could fuse into its users: the concatenated bias is one more copy
    unless frozen, the per-piece adds keep a cat of the pieces from folding back into the matmul."""
    if t.ctor != Ctor.LINEAR:
        yield from _match_mm_lhs(ctx, t)
        return
    sigs = _linear_sigs(ctx, t)
    if sigs is None:
        return
    x, (_, ws, bias) = t.args[0], sigs
    if bias is not None and ctx.feeds_fusible_only(ctx.ref_of(t)):
        yield "linear" + EPILOGUE, x, ws[1], bias[1]
    yield "linear", x, ws[1], bias and bias[1]


def _mm_sigs(ctx: Ctx, t: Term) -> tuple | None:
    """(c, a, b, their signatures) of an mm (c None, its signature ()) or addmm with known operands."""
    c, a, b = t.args if t.ctor == Ctor.ADDMM else (None, *t.args)
    sa, sb = ctx.sig(a), ctx.sig(b)
    sc = ctx.sig(c) if c is not None else ()
    return None if sa is None or sb is None or sc is None else (c, a, b, sa, sb, sc)


def match_batch_mm(ctx: Ctx, t: Term) -> Iterator[Hashable]:
    sigs = _mm_sigs(ctx, t)
    if sigs is not None:
        yield (t.ctor, *sigs[3:])


def _match_mm_lhs(ctx: Ctx, t: Term) -> Iterator[Hashable]:
    sigs = _mm_sigs(ctx, t)
    if sigs is None:
        return
    c, a, _, _, sb, sc = sigs
    if c is None:
        yield "mm", a, sb[1]
    elif len(sc[0]) in (1, 2) and sc[0][-1] == sb[0][1]:
        if ctx.feeds_fusible_only(ctx.ref_of(t)):
            yield "addmm" + EPILOGUE, a, sb[1], sc[0][:-1], sc[1]
        yield "addmm", a, sb[1], sc[0][:-1], sc[1]


def match_layernorm(ctx: Ctx, t: Term) -> Iterator[Hashable]:
    x, nshape, w, b, eps = t.args
    sig = ctx.sig(x)
    affine = tuple(None if ctx.is_none(p) else ctx.sig(p) for p in (w, b))
    if sig is not None and all(a is not None or ctx.is_none(p) for a, p in zip(affine, (w, b))):
        yield sig, nshape, eps, affine


def match_unary(ctx: Ctx, t: Term) -> Iterator[Hashable]:
    key, x = t.args
    sig = ctx.sig(x)
    if sig is not None and sig[0]:
        yield key, sig


def match_binary(ctx: Ctx, t: Term) -> Iterator[Hashable]:
    """A rank-0 or Python-scalar operand is part of the key (it must be shared): stacking it would
    make it a dimensioned tensor and change type promotion."""
    key, x, y = t.args
    sx, sy = ctx.sig(x), ctx.sig(y)
    if sx is None or sy is None or not (sx[0] or sy[0]):
        return
    shared = tuple(r if not s[0] else None for r, s in ((x, sx), (y, sy)))
    yield key, sx, sy, shared


# -- guards on a group ---------------------------------------------------------------------------------
# batch_linear's and group_linear's members read distinct inputs: linears sharing one are batch_linear_lhs'
# (one mm on the concatenated weight), and stacking one activation k times copies it k times. It is also
# a miscompile: Inductor (2.11 on the H200, 2.13 on CPU) computed HF BART wrongly (max error 6.2) when a
# stack of [x, y, y, y] fed the batched matmul; docs/upstream/inductor_stacked_repeat/ is that valid
# graph, exact eagerly, wrong by ~1 through Inductor alone (the reproducer for upstream).
# batch_mm stacks both operands (and addmm's bias): each must be distinct too (BERT's backward stacked
# one activation three times).
def input_operand(t: Term) -> set:
    return {(0, t.args[0])}


def all_operands(t: Term) -> set:
    return set(enumerate(t.args))


def shapes_differ(ctx: Ctx, ts: list[Term]) -> bool:
    """group_linear's members are not all of one shape (those are batch_linear's)."""
    return len({(ctx.shape(t.args[0]), ctx.shape(t.args[1])) for t in ts}) > 1


def refs(x) -> Iterator[str]:
    """The lets a term reads."""
    if isinstance(x, Ref):
        yield x.let
    elif isinstance(x, Term):
        for a in x.args:
            yield from refs(a)
    elif isinstance(x, TList):
        for a in x.items:
            yield from refs(a)
