"""Symbolic sizes between FX and the engine: SymInts in, encoded sizes through, expressions out.

Lowering writes every size of a graph with symbols (``SymInt`` tensor dims, ``SymInt`` arguments,
``sym_size``/arithmetic nodes) as an integer of :mod:`eqsat.sizes`: a linear form over at most two
atoms (a symbol, or a non-linear sub-expression kept whole), exact under the engine's sums and
equality tests. Unbacked symbols (``.item()``, ``nonzero``) have no hint and no encoding: the node
that has one is lowered as opaque, and ops that would need its size stay opaque too.

Raising turns an encoded size back into FX nodes over the new graph's own inputs: a symbol is read
from the ``SymInt`` placeholder Dynamo/AOTAutograd lifted for it, or from the dim of an input tensor
that has it; sums and multiples become ``operator`` nodes. Last, the new graph is traced under the
original ShapeEnv with new guards refused, and :func:`check_same_output_sizes` compares every output's
symbolic shape: a graph that is only right at the hint is never handed on.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Sequence

import torch
from torch.fx.node import map_aggregate

from eqsat.sizes import Linear, SizeOverflow, SizeTable

from eqsat_torch.inductor import compat


class UnbackedSize(Exception):
    """A size that depends on data (an unbacked symbol): no hint, no expression we can prove."""


class NotForEverySize(Exception):
    """The raised graph would only be right at some sizes (or cannot read a symbol from its inputs)."""


@dataclass(frozen=True)
class SymScalar:
    """A symbolic int value of the graph (a ``SymInt`` argument, ``x.size(0)``, ``s0 * 2``), encoded."""

    size: int

    def __repr__(self) -> str:  # part of opaque keys: stable across runs
        return f"SymScalar({self.size})"


class SymbolicSizes:
    """The encoding of one graph's sizes (lowering side). Empty for a static graph: then every size
    is its own int and nothing here changes a static compile."""

    def __init__(self, symbolic: bool = False):
        self.symbolic = symbolic  # the graph has symbols: literals are range-checked too
        self.table = SizeTable()

    def __bool__(self) -> bool:
        return self.symbolic

    def size(self, s: Any) -> int:
        """The engine integer of one size (an int or a SymInt)."""
        if not isinstance(s, torch.SymInt):
            return self.table.literal(int(s)) if self.symbolic else int(s)
        expr = compat.sym_expr(s)
        if expr.is_number:
            return self.table.literal(int(expr))
        env = compat.shape_env_of(s)
        if compat.sym_hint(expr, env) is None:
            raise UnbackedSize(str(expr))
        const, coefs = 0, {}
        for term, c in expr.as_coefficients_dict().items():
            if not c.is_integer:
                raise SizeOverflow(f"size {expr} has a non-integer coefficient")
            if term == 1:
                const += int(c)
            else:
                i = self.table.atom(term, compat.sym_hint(term, env))
                coefs[i] = coefs.get(i, 0) + int(c)
        return self.table.encode(const, coefs)

    def shape(self, shape: Sequence[Any]) -> tuple[int, ...]:
        return tuple(self.size(s) for s in shape)


def fake_inputs(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> list[Any]:
    """What to propagate fake values from: the placeholders' own recorded fakes when every one has
    one (a symbolic graph's are over its ShapeEnv, so new nodes get symbolic sizes; and nothing is
    converted again: wide_recsys' 1,100 parameters took 0.5 s to fake anew); the example inputs
    otherwise."""
    recorded = [compat.node_value(n) for n in gm.graph.nodes if n.op == "placeholder"]
    if len(recorded) == len(example_inputs) and all(
            compat.is_fake(r) or (r is not None and not isinstance(r, torch.Tensor)) for r in recorded):
        return recorded
    return list(example_inputs)


class SymNodes:
    """Builds, in a new graph, the nodes that compute symbolic sizes (raising side)."""

    def __init__(self, graph: torch.fx.Graph, sizes: SymbolicSizes, placeholders: Sequence[torch.fx.Node],
                 values: Sequence[Any], dialect: str):
        self.graph, self.sizes, self.dialect = graph, sizes, dialect
        self.cache: dict[Any, torch.fx.Node] = {}
        self.sources: dict[Any, tuple[torch.fx.Node, int | None]] = {}
        for ph, val in zip(placeholders, values):
            if isinstance(val, torch.SymInt):
                self.sources.setdefault(compat.sym_expr(val), (ph, None))
        for ph, val in zip(placeholders, values):
            if isinstance(val, torch.Tensor):
                for d, s in enumerate(val.shape):
                    if isinstance(s, torch.SymInt):
                        self.sources.setdefault(compat.sym_expr(s), (ph, d))

    def arg(self, x: Any) -> Any:
        """An argument for a new node: encoded sizes (``Linear``, ``SymScalar``) become nodes."""
        if isinstance(x, SymScalar):
            x = self.sizes.table.linear(x.size)
        if isinstance(x, Linear):
            return self.linear(x)
        return x

    def args(self, args: Any) -> Any:
        return map_aggregate(args, self.arg)

    def linear(self, lin: Linear) -> torch.fx.Node | int:
        if lin in self.cache:
            return self.cache[lin]
        out: Any = None
        for atom, c in lin.terms:
            term = self.expr(atom)
            if c != 1:
                term = self._call(operator.mul, term, c)
            out = term if out is None else self._call(operator.add, out, term)
        if out is None:
            return lin.const
        if lin.const:
            out = self._call(operator.add, out, lin.const) if lin.const > 0 else self._call(operator.sub, out, -lin.const)
        self.cache[lin] = out
        return out

    def expr(self, e: Any) -> torch.fx.Node:
        """A node computing sympy expression ``e`` (a symbol, or sums, products, floor divisions)."""
        if e in self.cache:
            return self.cache[e]
        if e in self.sources:
            node, d = self.sources[e]
            out = node if d is None else self._size(node, d)
        elif e.is_Symbol:
            raise NotForEverySize(f"no input carries the symbol {e}")
        elif e.is_Add or e.is_Mul:
            parts = [int(a) if a.is_Integer else self.expr(a) for a in e.args]
            out = parts[0]
            for p in parts[1:]:
                out = self._call(operator.add if e.is_Add else operator.mul, out, p)
        elif compat.is_floor_div(e):
            a, b = (int(x) if x.is_Integer else self.expr(x) for x in e.args)
            out = self._call(operator.floordiv, a, b)
        else:
            raise SizeOverflow(f"cannot write size {e} back as an FX expression")
        self.cache[e] = out
        return out

    def _size(self, x: torch.fx.Node, d: int) -> torch.fx.Node:
        if self.dialect == "aten":
            return self.graph.call_function(torch.ops.aten.sym_size.int, (x, d))
        return self.graph.call_method("size", (x, d))

    def _call(self, fn, a, b) -> torch.fx.Node:
        return self.graph.call_function(fn, (a, b))


def shape_env_of(values: Sequence[Any]) -> Any:
    """The ShapeEnv the symbolic values (SymInts, fake tensors) of a graph live in; None if static."""
    for v in values:
        for s in ([v] if isinstance(v, torch.SymInt) else list(v.shape) if isinstance(v, torch.Tensor) else []):
            if isinstance(s, torch.SymInt):
                return compat.shape_env_of(s)
    return None


def check_same_output_sizes(original: torch.fx.GraphModule, new: torch.fx.GraphModule) -> None:
    """Every output of ``new`` (fresh fake values in ``meta['val']``) has the symbolic shape of the
    original's: raises :class:`NotForEverySize` otherwise. With new guards refused while ``new`` was
    traced (``eqsat_torch.raising.raising.refresh_fake_values``), the graph is right for every admitted size."""
    want = [compat.node_value(n) if isinstance(n, torch.fx.Node) else n for n in output_leaves(original)]
    got = [n.meta.get("val") if isinstance(n, torch.fx.Node) else n for n in output_leaves(new)]
    if len(want) != len(got):
        raise NotForEverySize("the optimized graph has a different number of outputs")
    for w, g in zip(want, got):
        if _sizes(w) != _sizes(g):
            raise NotForEverySize(f"output size {_sizes(g)} is not {_sizes(w)} for every admitted size")


def output_leaves(gm: torch.fx.GraphModule | torch.fx.Graph) -> list[Any]:
    """The output's leaves in order (FX nodes, or constants)."""
    graph = gm.graph if isinstance(gm, torch.fx.GraphModule) else gm
    out = next(n for n in reversed(graph.nodes) if n.op == "output")
    leaves: list[Any] = []
    map_aggregate(out.args[0], leaves.append)
    return leaves


def _sizes(v: Any) -> Any:
    if isinstance(v, torch.Tensor):
        return tuple(compat.sym_expr(s) for s in v.shape)
    return compat.sym_expr(v) if isinstance(v, torch.SymInt) else type(v)
