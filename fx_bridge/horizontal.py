"""Horizontal (batch) fusion: groups of independent, identical ops, offered to the e-graph as unions.

Optimus (group_batch_fusion.py) searches 5 hops upstream of each anchor, needs 5 candidates and
always rewrites. Here every let of the lowered program is a candidate, wherever it sits: each
fusion in ``MATCHERS`` maps a term to a group key (equal shapes, dtypes, attributes — or the same
input for ``batch_linear_lhs``); each key's members are split greedily, in topological order, into
subsets where no member is an ancestor of another (the term graph is a networkx DAG); every subset
of 2 or more is built once in its batched form and each member is unioned with its piece of it:

    hz3 = bmm(stack(xs, 0), permute(stack(ws, 0), [0, 2, 1]))          # Program.let
    t17 ≡ squeeze(split(hz3, [1, 1, 1], 0)[1], 0)                        # Program.same

Nothing here decides whether fusing pays: the extractor prices both forms with the Inductor-shaped
cost model, so a group of two tiny ops stays unfused. The unions are inserted once, before
saturation, so no rule ever batches a batched form; the stacks and unbinds they add are ordinary
``Stack``/``Split``/``Squeeze`` terms that the split_cat rules cancel against neighbouring splits
and stacks. Matching is on terms, so Torch-IR (``linear``) and Aten-IR (``mm``/``addmm``) graphs
are covered by the same code.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Callable, Hashable, Iterator, Sequence

import networkx as nx

from eqsat.ops import CTOR_CATEGORY, Category, op_name_of_key
from eqsat.sizes import product
from eqsat.terms import IVec, Program, Ref, Term, TList
from rules.batch import BATCH_RULES, FAMILY

from .lower import Lowered

NONE = Term("NoneT", ())


class Unions(Program):
    """The fused forms and ``same`` pairs (a program for ``Session.load``), plus ``counts``: how many
    groups each batch rule inserted, for ``Report.rules_fired``."""

    def __init__(self):
        super().__init__()
        self.counts: Counter = Counter()
        self.inserted: dict[str, str] = {}  # let of a fused-form term → the batch rule that made it
        self.members: list[str] = []  # lets unioned with their piece of a fused form


@dataclass
class _Ctx:
    """Shapes, dtypes and terms of the lowered program, looked up by Ref."""

    low: Lowered

    def shape(self, r: Ref) -> tuple | None:
        return self.low.shapes.get(r.let)

    def dtype(self, r: Ref) -> str | None:
        return self.low.dtypes.get(r.let)

    def term(self, r: Ref) -> Term | None:
        return self.low.originals.get(r.let)

    def is_none(self, r: Ref) -> bool:
        t = self.term(r)
        return t is not None and t.ctor == "NoneT"

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
            for src in set(_refs(t)):
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
    return Term("Stack", (TList(tuple(xs)), d))


def _cat(xs: Sequence, d: int) -> Term:
    return Term("Cat", (TList(tuple(xs)), d))


def _view(x, shape: Sequence[int]) -> Term:
    return Term("View", (x, IVec(tuple(shape))))


def _unbind(y: Ref, n: int, d: int = 0) -> list[Term]:
    """``y.unbind(d)`` spelled the way lowering spells it, so the split_cat rules see it."""
    tup = Term("Split", (y, IVec((1,) * n), d))
    return [Term("Squeeze", (Term("Get", (tup, i)), d)) for i in range(n)]


def _split(y: Ref, sizes: Sequence[int], d: int) -> list[Term]:
    tup = Term("Split", (y, IVec(tuple(sizes)), d))
    return [Term("Get", (tup, i)) for i in range(len(sizes))]


def _stack_at(ctx: _Ctx, xs: Sequence[Ref], rank: int, d: int) -> Term:
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
Build = Callable[[_Ctx, list[Term], Bind], list]  # members → each member's fused piece (or a list of them)


# -- fused forms -------------------------------------------------------------------------------------
def _build_batch_linear(ctx: _Ctx, ts: list[Term], bind: Bind) -> list[Term]:
    xs, ws, bs = zip(*(t.args for t in ts))
    n, xshape = len(ts), ctx.shape(xs[0])
    k, out = xshape[-1], ctx.shape(ws[0])[0]
    x = _stack(xs) if len(xshape) == 2 else _view(_stack(xs), (n, ctx.rows(xshape[:-1]), k))
    w = Term("Permute", (_stack(ws), IVec((0, 2, 1))))
    shaped = (lambda p: p) if len(xshape) == 2 else (lambda p: _view(p, xshape[:-1] + (out,)))
    products = [shaped(p) for p in _unbind(bind(Term("Bmm", (x, w))), n)]
    if ctx.is_none(bs[0]):
        return products
    # with biases: one baddbmm of the stacked biases, or each product plus its own bias, which costs
    # no stack of the biases (a copy per bias where weights are runtime values) and fuses with its users
    summed = [shaped(p) for p in _unbind(bind(Term("Baddbmm", (Term("Unsqueeze", (_stack(bs), 1)), x, w))), n)]
    return [[s, Term("Binary", ("add", p, b))] for s, p, b in zip(summed, products, bs)]


def _pad(x, pads: Sequence[int]) -> object:
    return Term("Pad", (x, IVec(tuple(pads)))) if any(pads) else x


def _build_group_linear(ctx: _Ctx, ts: list[Term], bind: Bind) -> list[Term]:
    """Linears of different shapes as one bmm: zero-pad every x_i to [rows, Kmax] and W_i to
    [Nmax, Kmax], stack, multiply, narrow each output to its N_i, add its bias. The padded terms are
    0·0 or land in the rows the narrow drops, so every kept output sums exactly x_i's products."""
    xs, ws, bs = zip(*(t.args for t in ts))
    lead = ctx.shape(xs[0])[:-1]
    (n_max, k_max) = (max(ctx.shape(w)[d] for w in ws) for d in (0, 1))
    x = _stack([_pad(x if len(lead) == 1 else _view(x, (ctx.rows(lead), ctx.shape(x)[-1])),
                     (0, k_max - ctx.shape(x)[-1])) for x in xs])
    w = _stack([_pad(w, (0, k_max - ctx.shape(w)[1], 0, n_max - ctx.shape(w)[0])) for w in ws])
    pieces = _unbind(bind(Term("Bmm", (x, Term("Permute", (w, IVec((0, 2, 1))))))), len(ts))
    out = []
    for p, w, b in zip(pieces, ws, bs):
        n = ctx.shape(w)[0]
        y = p if n == n_max else Term("Narrow", (p, 1, 0, n))
        y = y if len(lead) == 1 else _view(y, lead + (n,))
        out.append(y if ctx.is_none(b) else Term("Binary", ("add", y, b)))
    return out


def _build_linear_lhs(ctx: _Ctx, ts: list[Term], bind: Bind, epilogue: bool = False) -> list[Term]:
    """One linear on the concatenated weight, split. ``epilogue``: each piece adds its own bias instead
    of one concatenated bias. Inductor splits a biased matmul whose users are pointwise into mm +
    epilogue, so the adds fuse into the pieces' consumers (the copies a 4-D matmul makes of each
    head-split piece), where a concatenated bias is one more copy a call without freezing."""
    x = ts[0].args[0]
    _, ws, bs = zip(*(t.args for t in ts))
    bias = NONE if epilogue or ctx.is_none(bs[0]) else _cat(bs, 0)
    y = bind(Term("Linear", (x, _cat(ws, 0), bias)))
    pieces = _split(y, [ctx.shape(w)[0] for w in ws], len(ctx.shape(x)) - 1)
    return [Term("Binary", ("add", p, b)) for p, b in zip(pieces, bs)] if epilogue else pieces


def _build_mm_lhs(ctx: _Ctx, ts: list[Term], bind: Bind, epilogue: bool = False) -> list[Term]:
    """The Aten spelling of ``_build_linear_lhs``: ``mm``s, or ``addmm``s as one ``addmm`` on the
    concatenated biases or (``epilogue``) one ``mm`` whose pieces add their own."""
    x, ws = ts[0].args[-2], [t.args[-1] for t in ts]
    cs = [t.args[0] for t in ts] if ts[0].ctor == "Addmm" else []
    if cs and not epilogue:
        y = bind(Term("Addmm", (_cat(cs, len(ctx.shape(cs[0])) - 1), x, _cat(ws, 1))))
    else:
        y = bind(Term("Mm", (x, _cat(ws, 1))))
    pieces = _split(y, [ctx.shape(w)[1] for w in ws], 1)
    return [Term("Binary", ("add", p, c)) for p, c in zip(pieces, cs)] if epilogue else pieces


def _build_batch_mm(ctx: _Ctx, ts: list[Term], bind: Bind) -> list[Term]:
    if ts[0].ctor == "Mm":
        a, b = zip(*(t.args for t in ts))
        y = Term("Bmm", (_stack(a), _stack(b)))
    else:
        c, a, b = zip(*(t.args for t in ts))
        y = Term("Baddbmm", (_stack_at(ctx, c, 2, 0), _stack(a), _stack(b)))
    return _unbind(bind(y), len(ts))


def _build_layernorm(ctx: _Ctx, ts: list[Term], bind: Bind) -> list[Term]:
    """layer_norm(stack(x)) without affine, then the stacked affine broadcast over the batch dims;
    the new dim goes in front of the normalized dims."""
    xs, nshapes, ws, bs, eps = zip(*(t.args for t in ts))
    rank = len(ctx.shape(xs[0]))
    d = _stack_dim(rank - len(nshapes[0].items))
    y = Term("LayerNorm", (_stack(xs, d), nshapes[0], NONE, NONE, eps[0]))
    if not ctx.is_none(ws[0]):
        y = Term("Binary", ("mul", y, _stack_at(ctx, ws, rank, d)))
    if not ctx.is_none(bs[0]):
        y = Term("Binary", ("add", y, _stack_at(ctx, bs, rank, d)))
    return _unbind(bind(y), len(ts), d)


def _build_unary(ctx: _Ctx, ts: list[Term], bind: Bind) -> list[Term]:
    d = _stack_dim(len(ctx.shape(ts[0].args[1])))
    return _unbind(bind(Term("Unary", (ts[0].args[0], _stack([t.args[1] for t in ts], d)))), len(ts), d)


def _build_binary(ctx: _Ctx, ts: list[Term], bind: Bind) -> list[Term]:
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
            ops.append(Term("Unsqueeze", (side[0], d)))
        else:
            ops.append(side[0])
    return _unbind(bind(Term("Binary", (key, *ops))), len(ts), d)


# -- matchers: term → (rule, group key, builder) ------------------------------------------------------
Match = tuple[str, Hashable, Build]

UNARY_RULES = {"tanh": "batch_tanh", "sigmoid": "batch_sigmoid", "relu": "batch_relu",
               "detach": "batch_detach", "nan_to_num": "batch_nan_to_num", "clamp": "batch_clamp"}
BINARY_RULES = {"add": "batch_add", "sub": "batch_sub", "mul": "batch_mul", "div": "batch_div"}
# Left to Inductor in the Aten graphs of a GPU compile: there the pointwise ops still apart are mostly a
# decomposed layer norm's, which Triton fuses with the norm's reductions; stacked across two norms they
# cost launches the GPU model does not see (H200, BART inference under freezing: the post-grad batches
# were priced one launch fewer, and the program measured one more than Inductor alone, 76 vs 75). The
# Dynamo graph's batches (interformer's per-feature clamps) stay.
POINTWISE_BATCHES = (*UNARY_RULES.values(), "batch_unary", *BINARY_RULES.values(), "batch_binary")


def _match_linear(ctx: _Ctx, t: Term) -> Iterator[Match]:
    x, w, b = t.args
    xs, ws = ctx.sig(x), ctx.sig(w)
    bias = None if ctx.is_none(b) else ctx.sig(b)
    if xs is None or ws is None or len(ws[0]) != 2 or (bias is None) != ctx.is_none(b):
        return
    if len(xs[0]) >= 2 and ctx.rows(xs[0][:-1]) is not None:
        yield "batch_linear", (xs, ws, bias), _build_batch_linear
        if (xs[1] in FLOAT_DTYPES and ws[1] == xs[1] and bias in (None, ((ws[0][0],), xs[1]))
                and ctx.static(ws[0])):
            yield "group_linear", (xs[0][:-1], xs[1], bias is None), _build_group_linear
    # both spellings where the bias could fuse into its users: the concatenated bias is one more copy
    # unless frozen, the per-piece adds keep a cat of the pieces from folding back into the matmul
    if bias is not None and ctx.feeds_fusible_only(ctx.ref_of(t)):
        yield ("batch_linear_lhs", ("linear+epilogue", x, ws[1], bias[1]),
               partial(_build_linear_lhs, epilogue=True))
    yield "batch_linear_lhs", ("linear", x, ws[1], bias and bias[1]), _build_linear_lhs


def _match_mm(ctx: _Ctx, t: Term) -> Iterator[Match]:
    c, a, b = t.args if t.ctor == "Addmm" else (None, *t.args)
    sa, sb = ctx.sig(a), ctx.sig(b)
    sc = ctx.sig(c) if c is not None else ()
    if sa is None or sb is None or sc is None:
        return
    yield "batch_mm", (t.ctor, sa, sb, sc), _build_batch_mm
    if c is None:
        yield "batch_linear_lhs", ("mm", a, sb[1]), _build_mm_lhs
    elif len(sc[0]) in (1, 2) and sc[0][-1] == sb[0][1]:
        if ctx.feeds_fusible_only(ctx.ref_of(t)):
            yield ("batch_linear_lhs", ("addmm+epilogue", a, sb[1], sc[0][:-1], sc[1]),
                   partial(_build_mm_lhs, epilogue=True))
        yield "batch_linear_lhs", ("addmm", a, sb[1], sc[0][:-1], sc[1]), _build_mm_lhs


def _match_layernorm(ctx: _Ctx, t: Term) -> Iterator[Match]:
    x, nshape, w, b, eps = t.args
    sig = ctx.sig(x)
    affine = tuple(None if ctx.is_none(p) else ctx.sig(p) for p in (w, b))
    if sig is not None and all(a is not None or ctx.is_none(p) for a, p in zip(affine, (w, b))):
        yield "batch_layernorm", (sig, nshape, eps, affine), _build_layernorm


def _match_unary(ctx: _Ctx, t: Term) -> Iterator[Match]:
    key, x = t.args
    sig = ctx.sig(x)
    if sig is not None and sig[0]:
        yield UNARY_RULES.get(op_name_of_key(key), "batch_unary"), (key, sig), _build_unary


def _match_binary(ctx: _Ctx, t: Term) -> Iterator[Match]:
    """A rank-0 or Python-scalar operand is part of the key (it must be shared): stacking it would
    make it a dimensioned tensor and change type promotion."""
    key, x, y = t.args
    sx, sy = ctx.sig(x), ctx.sig(y)
    if sx is None or sy is None or not (sx[0] or sy[0]):
        return
    shared = tuple(r if not s[0] else None for r, s in ((x, sx), (y, sy)))
    yield BINARY_RULES.get(op_name_of_key(key), "batch_binary"), (key, sx, sy, shared), _build_binary


FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})

MATCHERS: dict[str, Callable[[_Ctx, Term], Iterator[Match]]] = {
    "Linear": _match_linear, "Mm": _match_mm, "Addmm": _match_mm, "LayerNorm": _match_layernorm,
    "Unary": _match_unary, "Binary": _match_binary,
}
RULE_NAMES = frozenset(r.name for r in BATCH_RULES)
# batch_linear's and group_linear's members read distinct inputs: linears sharing one are batch_linear_lhs'
# (one mm on the concatenated weight), and stacking one activation k times copies it k times. It is also
# a miscompile: Inductor (2.11 on the H200, 2.13 on CPU) computed HF BART wrongly (max error 6.2) when a
# stack of [x, y, y, y] fed the batched matmul; docs/upstream/inductor_stacked_repeat/ is that valid
# graph, exact eagerly, wrong by ~1 through Inductor alone (the reproducer for upstream).
# group_linear's are also not all of one shape (batch_linear's). batch_mm stacks both operands (and
# addmm's bias): each must be distinct too (BERT's backward stacked one activation three times).
def _input(t: Term) -> set:
    return {(0, t.args[0])}


def _operands(t: Term) -> set:
    return set(enumerate(t.args))


DISTINCT_OPERANDS: dict[str, Callable[[Term], set]] = {
    "batch_linear": _input, "group_linear": _input, "batch_mm": _operands}
ADMITS: dict[str, Callable[[_Ctx, list[Term]], bool]] = {
    "group_linear": lambda ctx, ts: len({(ctx.shape(t.args[0]), ctx.shape(t.args[1])) for t in ts}) > 1,
}


# -- discovery --------------------------------------------------------------------------------------
def _refs(x) -> Iterator[str]:
    if isinstance(x, Ref):
        yield x.let
    elif isinstance(x, Term):
        for a in x.args:
            yield from _refs(a)
    elif isinstance(x, TList):
        for a in x.items:
            yield from _refs(a)


def term_graph(low: Lowered) -> nx.DiGraph:
    """let → let edges, producer to consumer."""
    g = nx.DiGraph()
    g.add_nodes_from(low.originals)
    g.add_edges_from((src, let) for let, t in low.originals.items() for src in _refs(t))
    return g


def _independent_subsets(members: list[str], anc: dict[str, int], bit: dict[str, int],
                         input_of: Callable[[str], set] | None = None) -> Iterator[list[str]]:
    """Optimus' greedy partition (``find_independent_subset_greedy``) without its size limits:
    walk in topological order, take a member unless a taken one is its ancestor (or, with
    ``input_of``, stacks one of the same operands); repeat on the rest."""
    while len(members) >= 2:
        taken, mask, rest, inputs = [], 0, [], set()
        for m in members:
            x = input_of(m) if input_of else set()
            if anc[m] & mask or x & inputs:
                rest.append(m)
            else:
                taken.append(m)
                mask |= bit[m]
                inputs |= x
        if len(taken) >= 2:
            yield taken
        members = rest


def _position(ctx: _Ctx, r: Ref, order: dict[str, int]) -> tuple[int, int]:
    """Where an operand comes from: (split tuple, piece) through views, so members over the pieces
    of one split are stacked in piece order and the split_cat rules can cancel the stack."""
    t = ctx.term(r)
    while t is not None and t.ctor in ("Squeeze", "Unsqueeze", "View") and isinstance(t.args[0], Ref):
        r, t = t.args[0], ctx.term(t.args[0])
    if t is not None and t.ctor == "Get" and isinstance(t.args[0], Ref):
        return order.get(t.args[0].let, 0), t.args[1]
    return order.get(r.let, 0), 0


def find_groups(low: Lowered, disabled: Sequence[str] = ()) -> list[tuple[str, Build, list[str]]]:
    """(rule, builder, member lets) for every independent group of 2 or more."""
    off = set(disabled)
    if FAMILY in off:
        return []
    ctx = _Ctx(low)
    g = term_graph(low)
    order = {let: i for i, let in enumerate(nx.topological_sort(g))}
    keyed: dict[tuple[str, Hashable, bool], tuple[Build, list[str]]] = {}
    for let in sorted(low.originals, key=order.__getitem__):
        t = low.originals[let]
        matcher = MATCHERS.get(t.ctor)
        if matcher is None or ctx.shape(Ref(let)) is None:
            continue
        for rule, key, build in matcher(ctx, t):  # never a value passing gradient with one passing none
            if rule in RULE_NAMES and rule not in off:
                keyed.setdefault((rule, key, let in low.grad_dead), (build, []))[1].append(let)
    candidates = {let for _, lets in keyed.values() if len(lets) >= 2 for let in lets}
    bit = {let: 1 << i for i, let in enumerate(sorted(candidates, key=order.__getitem__))}
    anc: dict[str, int] = {}
    for let in sorted(g, key=order.__getitem__):  # candidate ancestors of every let, as a bitset
        a = 0
        for p in g.predecessors(let):
            a |= anc[p] | bit.get(p, 0)
        anc[let] = a
    groups = []
    for (rule, *_), (build, lets) in keyed.items():
        operands = DISTINCT_OPERANDS.get(rule)
        input_of = (lambda m: operands(low.originals[m])) if operands else None
        for subset in _independent_subsets(lets, anc, bit, input_of):
            if not ADMITS.get(rule, lambda *_: True)(ctx, [low.originals[m] for m in subset]):
                continue
            first = [low.originals[m].args[{"Unary": 1, "Binary": 1, "Addmm": 1}.get(low.originals[m].ctor, 0)]
                     for m in subset]
            ranked = sorted(zip(first, subset),
                            key=lambda p: (_position(ctx, p[0], order) if isinstance(p[0], Ref) else (0, 0),
                                           order[p[1]]))
            groups.append((rule, build, [m for _, m in ranked]))
    return groups


def horizontal_unions(low: Lowered, disabled: Sequence[str] = ()) -> Unions:
    """A program that unions each fusible group's members with their piece of the fused form."""
    ctx = _Ctx(low)
    out = Unions()
    uses_none = False
    for gi, (rule, build, members) in enumerate(find_groups(low, disabled)):
        lets: list[str] = []

        def bind(term: Term) -> Ref:
            nonlocal uses_none
            name = f"$hz{gi}_{len(lets)}"
            lets.append(name)
            out.inserted[name] = rule
            uses_none |= _mentions(term, NONE)
            return out.let(name, term)

        pieces = build(ctx, [low.originals[m] for m in members], bind)
        splits: dict[Term, Ref] = {}
        for m, alternatives in zip(members, pieces):
            for p in alternatives if isinstance(alternatives, list) else [alternatives]:
                uses_none |= _mentions(p, NONE)
                out.same(Ref(m), _bind_splits(p, bind, splits))  # unioned by Session.seed
            out.members.append(m)
        out.counts[rule] += 1
    if uses_none:  # the facts lowering gives every NoneT it emits (norm costs read them)
        facts = Program()
        facts.set_shape(NONE, ())
        facts.set_dtype(NONE, "scalar")
        out.prepend(facts)
    return out


def _bind_splits(x, bind, bound: dict) -> object:
    """``x`` with each ``Split`` bound once by ``bind``: the n pieces of a fused form share one split
    of n sizes, which spelled out in every ``same`` pair is n² text for egglog to parse and evaluate
    (4 s at 512 pieces)."""
    if isinstance(x, Term):
        t = Term(x.ctor, tuple(_bind_splits(a, bind, bound) for a in x.args))
        if t.ctor == "Split":
            if t not in bound:
                bound[t] = bind(t)
            return bound[t]
        return t
    if isinstance(x, TList):
        return TList(tuple(_bind_splits(a, bind, bound) for a in x.items))
    return x


def _mentions(x, term: Term) -> bool:
    if x == term:
        return True
    if isinstance(x, Term):
        return any(_mentions(a, term) for a in x.args)
    if isinstance(x, TList):
        return any(_mentions(a, term) for a in x.items)
    return False
