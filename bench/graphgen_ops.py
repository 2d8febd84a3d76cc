"""Drawing a random program op by op: a pool of live values, one op draw at a time (unary, binary,
split, cat, views, reductions, matmuls, opaque ops), each spelled as Dynamo spells it; the knobs of
``bench.graphgen.random_graph`` (``Features``) and the constants it draws from."""
from __future__ import annotations

import operator
import random
from dataclasses import dataclass
from typing import Callable

import torch
import torch.fx as fx
import torch.nn.functional as F


FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
DIMS = (1, 2, 3, 4, 6, 8)
LAYOUTS = ("transposed", "channels_last", "expanded", "sliced")
GRAD_REGIONS = ("no_grad", "enable_grad", "inference_mode")
INPLACE_OPS = ("zero_", "mul_", "add_", "copy_", "fill_", "setitem")
# Ops whose result shares its first argument's storage (what an in-place write through it reaches).
_VIEW_METHODS = {"split", "chunk", "unbind", "narrow", "select", "flatten", "permute", "transpose", "unsqueeze",
                 "squeeze", "view", "reshape", "expand", "t", "detach"}


@dataclass
class Features:
    """What ``random_graph`` adds on request. The default draws exactly the graphs it always drew."""

    layouts: float = 0.0               # chance an input gets a layout other than contiguous
    rank4: float = 0.0                 # chance an input is 4-D (channels_last needs one)
    inplace: float = 0.0               # chance an op draw is an in-place block instead
    grad_region: str | None = None     # one region of this mode (GRAD_REGIONS) around a run of op draws
    grad_base: bool = True             # the grad mode the graph runs under (a region restores it)
    leaves_require_grad: bool = False  # the inputs will require grad: only fresh clones are written
    autocast_region: tuple[str, torch.dtype] | None = None  # (device type, dtype): one region around a run
    autocast_off_inside: float = 0.0   # chance the region holds a nested ``enabled=False`` region
    split_linear: float = 0.0          # chance an op draw is split -> a linear per piece -> cat (issue 41's)


@dataclass
class Value:
    node: fx.Node
    shape: tuple
    dtype: torch.dtype


class _OpDraws:
    """The pool of values and the plain op draws; ``_Builder`` adds the feature draws."""

    def __init__(self, rng: random.Random, dtype: torch.dtype, n_inputs: int, features: Features | None = None):
        self.rng, self.dtype, self.features = rng, dtype, features
        self.graph = fx.Graph()
        self.pool: list[Value] = []
        self.inputs: list[torch.Tensor] = []
        self.input_of: dict[fx.Node, torch.Tensor] = {}
        self.layout_of: dict[fx.Node, str] = {}
        self.layouts: list[str] = []               # per input: "contiguous" or one of LAYOUTS
        self.inplace_ops: list[str] = []           # e.g. "mul_ on a slice of an input"
        self.region: str | None = None             # the grad-mode region being built, if any
        self.inference_nodes: set[fx.Node] = set()  # made in an inference_mode region: never written
        self.autocast: list[tuple] = []            # the open autocast regions: (enter node, enabled, dtype)
        for i in range(n_inputs):
            rank = rng.randint(2, 3)
            if features is not None and rng.random() < features.rank4:
                rank = 4
            shape = tuple(rng.choice(DIMS) for _ in range(rank))
            self.add_input(f"x{i}", shape)

    def add_input(self, name: str, shape: tuple) -> Value:
        node = self.graph.placeholder(name)
        if self.dtype.is_floating_point:
            t = torch.randn(shape, generator=self._gen()).to(self.dtype)
        else:
            t = torch.randint(-5, 6, shape, generator=self._gen(), dtype=self.dtype)
        if self.features is not None:
            layout = "contiguous"
            if self.rng.random() < self.features.layouts:
                layout = ("channels_last" if len(shape) == 4 and self.rng.random() < 0.5
                          else self.rng.choice([k for k in LAYOUTS if k != "channels_last"]))
                if layout in ("transposed", "channels_last") and sum(n > 1 for n in shape) < 2 \
                        or layout == "expanded" and max(shape) == 1:
                    layout = "sliced"  # size-1 dims: no permutation or expand changes the layout
                t = self.with_layout(t, layout)
                if layout != "sliced" and t.is_contiguous():  # e.g. channels_last of C == 1
                    layout = "sliced"
                    t = self.with_layout(t.contiguous(), layout)
            self.layouts.append(layout)
            self.layout_of[node] = layout
            self.input_of[node] = t
        self.inputs.append(t)
        v = Value(node, shape, self.dtype)
        self.pool.append(v)
        return v

    def _gen(self) -> torch.Generator:
        return torch.Generator().manual_seed(self.rng.randint(0, 2**31))

    def _rand(self, shape) -> torch.Tensor:
        if self.dtype.is_floating_point:
            return torch.randn(shape, generator=self._gen()).to(self.dtype)
        return torch.randint(-5, 6, shape, generator=self._gen(), dtype=self.dtype)

    def with_layout(self, t: torch.Tensor, layout: str) -> torch.Tensor:
        """``t``'s shape in another layout: the values of ``t`` (an expanded one repeats a slice)."""
        rng, r = self.rng, t.dim()
        if layout == "transposed":  # a permutation of the dims of size > 1
            big = [d for d in range(r) if t.shape[d] > 1]
            moved = list(big)
            while moved == big:
                rng.shuffle(moved)
            perm = list(range(r))
            for d, e in zip(big, moved):
                perm[d] = e
            inv = [perm.index(i) for i in range(r)]
            return t.permute(perm).contiguous().permute(inv)
        if layout == "channels_last":
            return t.contiguous(memory_format=torch.channels_last)
        if layout == "expanded":  # stride 0 along one or two dims
            shape = t.shape
            big = [d for d in range(r) if t.shape[d] > 1]
            for d in rng.sample(big, min(len(big), rng.randint(1, 2))):
                t = t.narrow(d, 0, 1)
            return t.expand(shape)
        # sliced: a window of a larger tensor, at a non-zero storage offset, rows strided
        front = [rng.randint(1, 2)] + [rng.randint(0, 2) for _ in range(r - 1)]
        back = [rng.randint(0, 1)] + [rng.randint(1, 2) for _ in range(r - 1)]
        big = self._rand(tuple(f + s + b for f, s, b in zip(front, t.shape, back)))
        window = big[tuple(slice(f, f + s) for f, s in zip(front, t.shape))]
        window.copy_(t)
        return window

    def writable(self, v: Value) -> bool:
        """An in-place write to ``v`` is legal in eager: no element of it shares memory with another
        (no expand on its way from an input), and it was not made in an ``inference_mode`` region."""
        return self._root(v.node)[1]

    def of_input(self, v: Value) -> bool:
        """``v`` is an input or a view of one: a write to it reaches the caller's tensor."""
        return self._root(v.node)[0].op == "placeholder"

    def _root(self, n: fx.Node) -> tuple[fx.Node, bool]:
        """The node whose storage ``n`` shares (through view ops), and whether ``n`` is writable."""
        writable = True
        while True:
            if n in self.inference_nodes:
                writable = False
            if n.op == "placeholder":
                return n, writable and self.layout_of.get(n) != "expanded"
            name = n.target if n.op == "call_method" else getattr(n.target, "__name__", "")
            if name == "expand":
                writable = False
            if not (name in _VIEW_METHODS or name == "getitem"):
                return n, writable
            n = n.args[0]

    def pick(self, pred: Callable[[Value], bool] = lambda v: True) -> Value | None:
        cands = [v for v in self.pool if v.shape and pred(v)]  # rank-0 values only feed outputs
        return self.rng.choice(cands) if cands else None

    def dim(self, rank: int) -> int:
        d = self.rng.randrange(rank)
        return d - rank if self.rng.random() < 0.3 else d  # negative spellings too

    def push(self, node: fx.Node, shape: tuple, dtype: torch.dtype | None = None) -> Value:
        v = Value(node, tuple(shape), dtype or self.dtype)
        self.pool.append(v)
        return v

    # -- ops -------------------------------------------------------------------------------------
    def unary(self):
        v = self.pick()
        g = self.graph
        if self.dtype.is_floating_point:
            choices = [
                lambda x: g.call_function(torch.relu, (x,)), lambda x: g.call_method("sigmoid", (x,)),
                lambda x: g.call_function(torch.tanh, (x,)), lambda x: g.call_function(F.gelu, (x,), {"approximate": "tanh"}),
                lambda x: g.call_function(F.silu, (x,)), lambda x: g.call_method("clamp", (x, -0.5, 0.5)),
                lambda x: g.call_function(operator.neg, (x,)), lambda x: g.call_method("exp", (x,)),
                lambda x: g.call_function(torch.abs, (x,)),
            ]
        else:
            choices = [lambda x: g.call_function(operator.neg, (x,)), lambda x: g.call_function(torch.abs, (x,))]
        self.push(self.rng.choice(choices)(v.node), v.shape)

    def binary(self):
        v = self.pick()
        other = self.pick(lambda w: w.shape == v.shape and w.dtype == v.dtype)
        g = self.graph
        rhs = other.node if other is not None and self.rng.random() < 0.7 else self.rng.choice([2, 3, -1])
        op = self.rng.choice([operator.add, operator.mul, operator.sub, torch.add, "mul", torch.maximum])
        if op is torch.maximum and not isinstance(rhs, fx.Node):
            op = operator.add
        node = g.call_method(op, (v.node, rhs)) if isinstance(op, str) else g.call_function(op, (v.node, rhs))
        self.push(node, v.shape)

    def where(self):
        v = self.pick()
        other = self.pick(lambda w: w.shape == v.shape and w.dtype == v.dtype)
        g = self.graph
        cond = g.call_function(operator.gt, (v.node, 0))
        self.push(g.call_function(torch.where, (cond, v.node, other.node)), v.shape)

    def split(self):
        v = self.pick()
        g = self.graph
        d = self.dim(len(v.shape))
        n = v.shape[d]
        kind = self.rng.choice(["split", "split_sizes", "chunk", "unbind"])
        if kind == "unbind":
            node = g.call_method("unbind", (v.node, d))
            shapes = [v.shape[:d % len(v.shape)] + v.shape[d % len(v.shape) + 1:]] * n
        else:
            if kind == "split":
                k = self.rng.randint(1, n)
                node = g.call_function(torch.split, (v.node, k), {"dim": d})
                sizes = [k] * (n // k) + ([n % k] if n % k else [])
            elif kind == "chunk":
                c = self.rng.randint(1, n)
                node = g.call_method("chunk", (v.node, c, d))
                k = -(-n // c)
                sizes = [k] * (n // k) + ([n % k] if n % k else [])
            else:
                cuts = sorted(self.rng.sample(range(1, n), self.rng.randint(0, n - 1))) if n > 1 else []
                sizes = [b - a for a, b in zip([0] + cuts, cuts + [n])]
                node = g.call_method("split", (v.node, sizes, d))
            dd = d % len(v.shape)
            shapes = [v.shape[:dd] + (s,) + v.shape[dd + 1:] for s in sizes]
        pieces = [self.push(g.call_function(operator.getitem, (node, i)), s) for i, s in enumerate(shapes)]
        if kind != "unbind" and len(pieces) > 1 and self.rng.random() < 0.7:
            self.cat_pieces(pieces, d)

    def cat_pieces(self, pieces: list[Value], d: int):
        """cat of split pieces: all in order, a run, a shuffle, or with a piece transformed."""
        order = list(range(len(pieces)))
        style = self.rng.choice(["all", "run", "shuffle", "mapped"])
        if style == "run":
            a = self.rng.randrange(len(order))
            order = order[a:self.rng.randint(a + 1, len(order))]
        elif style == "shuffle":
            self.rng.shuffle(order)
        xs = [pieces[i].node for i in order]
        if style == "mapped":
            xs = [self.graph.call_function(torch.relu, (x,)) if self.dtype.is_floating_point else x for x in xs]
        dd = d % len(pieces[0].shape)
        shape = list(pieces[0].shape)
        shape[dd] = sum(pieces[i].shape[dd] for i in order)
        fn = self.rng.choice([torch.cat, torch.concat])
        self.push(self.graph.call_function(fn, (xs,), {"dim": d}), shape)

    def cat_or_stack(self):
        v = self.pick()
        others = [w for w in self.pool if w.shape == v.shape and w.dtype == v.dtype]
        xs = [self.rng.choice(others) for _ in range(self.rng.randint(1, 3))]
        d = self.dim(len(v.shape))
        dd = d % len(v.shape)
        if self.rng.random() < 0.5:
            shape = list(v.shape)
            shape[dd] *= len(xs)
            self.push(self.graph.call_function(torch.cat, ([x.node for x in xs], d)), shape)
        else:
            shape = list(v.shape)
            shape.insert(dd, len(xs))
            self.push(self.graph.call_function(torch.stack, ([x.node for x in xs],), {"dim": dd}), shape)

    def slice(self):
        v = self.pick()
        g = self.graph
        d = self.rng.randrange(len(v.shape))
        n = v.shape[d]
        a = self.rng.randrange(n)
        b = self.rng.randint(a + 1, n)
        kind = self.rng.choice(["narrow", "getitem", "select"])
        if kind == "narrow":
            node = g.call_method("narrow", (v.node, d, a, b - a))
        elif kind == "getitem":
            idx = (slice(None),) * d + (slice(a, b),)
            node = g.call_function(operator.getitem, (v.node, idx))
        else:
            node = g.call_function(torch.select, (v.node, d, a))
            self.push(node, v.shape[:d] + v.shape[d + 1:])
            return
        shape = list(v.shape)
        shape[d] = b - a
        self.push(node, shape)

    def view(self):
        v = self.pick(lambda w: len(w.shape) >= 2)
        if v is None:  # (only in an inference_mode region: its own values may all be 1-D)
            return self.unary()
        g = self.graph
        r = len(v.shape)
        kind = self.rng.choice(["flatten", "permute", "transpose", "unsqueeze", "squeeze", "view", "expand"])
        if kind == "flatten":
            shape = v.shape[:-2] + (v.shape[-2] * v.shape[-1],)
            self.push(g.call_method("flatten", (v.node, -2)), shape)
        elif kind == "view":
            shape = (-1,) + v.shape[2:]
            out = (v.shape[0] * v.shape[1],) + v.shape[2:]
            method = self.rng.choice(["reshape", "view"]) if v.node.op == "placeholder" else "reshape"
            if method == "view" and v.node in self.input_of and not _viewable(self.input_of[v.node], out):
                method = "reshape"  # an input whose layout a view cannot flatten (eager would raise)
            self.push(g.call_method(method, (v.node, *shape)), out)
        elif kind == "permute":
            perm = list(range(r))
            self.rng.shuffle(perm)
            self.push(g.call_method("permute", (v.node, *perm)), tuple(v.shape[p] for p in perm))
        elif kind == "transpose":
            a, b = self.rng.sample(range(r), 2)
            shape = list(v.shape)
            shape[a], shape[b] = shape[b], shape[a]
            self.push(g.call_function(torch.transpose, (v.node, a - r, b)), shape)
        elif kind == "unsqueeze":
            d = self.rng.randint(0, r)
            shape = list(v.shape)
            shape.insert(d, 1)
            self.push(g.call_method("unsqueeze", (v.node, d)), shape)
        elif kind == "squeeze":
            shape = [s for s in v.shape if s != 1]
            self.push(g.call_method("squeeze", (v.node,)), shape)
        else:
            ones = [i for i, s in enumerate(v.shape) if s == 1]
            if not ones:
                return
            shape = list(v.shape)
            shape[ones[0]] = 3
            self.push(g.call_method("expand", (v.node, *shape)), shape)

    def reduce(self):
        v = self.pick()
        d = self.dim(len(v.shape))
        keep = self.rng.random() < 0.5
        name = self.rng.choice(["sum", "amax"] + (["mean"] if self.dtype.is_floating_point else []))
        shape = list(v.shape)
        if keep:
            shape[d] = 1
        else:
            shape.pop(d)
        self.push(self.graph.call_method(name, (v.node, d), {"keepdim": keep}), shape)

    def matmul(self):
        if not self.dtype.is_floating_point:
            return self.unary()
        v = self.pick()
        k = v.shape[-1]
        m = self.rng.choice(DIMS)
        w = self.add_input(f"w{len(self.inputs)}", (m, k))
        self.pool.remove(w)
        if self.rng.random() < 0.5 or self.region == "inference_mode":  # (no view of an input there)
            node = self.graph.call_function(F.linear, (v.node, w.node))
        else:
            wt = self.graph.call_method("t", (w.node,))
            node = self.graph.call_function(torch.matmul, (v.node, wt))
        lowp = self.autocast[-1][2] if self.autocast and self.autocast[-1][1] else None
        self.push(node, v.shape[:-1] + (m,), lowp if self.dtype == torch.float32 else None)

    def norm(self):
        if not self.dtype.is_floating_point:
            return self.reduce()
        v = self.pick()
        if self.rng.random() < 0.5:
            node = self.graph.call_function(torch.softmax, (v.node, -1))
        else:
            node = self.graph.call_function(F.layer_norm, (v.node, (v.shape[-1],)), {"eps": 1e-5})
        self.push(node, v.shape)

    def opaque(self):
        v = self.pick()
        g = self.graph
        d = self.rng.randrange(len(v.shape))
        if self.rng.random() < 0.5:
            self.push(g.call_function(torch.cumsum, (v.node, d)), v.shape, v.dtype if v.dtype.is_floating_point else torch.int64)
        else:
            srt = g.call_function(torch.sort, (v.node,), {"dim": d})
            self.push(g.call_function(operator.getitem, (srt, 0)), v.shape)


    OPS = ("unary", "binary", "where", "split", "cat_or_stack", "slice", "view", "reduce", "matmul",
           "norm", "opaque")


def _viewable(t: torch.Tensor, shape) -> bool:
    try:
        t.view(shape)
        return True
    except RuntimeError:
        return False
