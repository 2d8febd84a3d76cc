"""Random Torch-IR FX graphs drawn from the op table: for property tests, calibration and scaling.

A graph is grown op by op from a pool of live values, so it has fan-out, multi-output ops (split,
chunk, unbind, sort), opaque ops, views, reductions, matmuls and split/cat tangles. Every op is
spelled the way Dynamo spells it (functions, methods, operators, negative dims), so the generator
also exercises lowering's normalisation. ``rng`` is any ``random.Random`` (hypothesis' ``randoms()``
shrinks through it).

On request (``features=Features(...)``; off by default, so existing callers draw the same graphs) the
graph also has what the trust issues found missing: inputs with layouts (transposed, channels_last,
expanded with stride 0, sliced with a storage offset), a grad-mode region (``no_grad``,
``enable_grad``, ``inference_mode``) around a run of ops, spelled as Dynamo records it, and in-place
ops on inputs and views of inputs (``zero_``, ``mul_``, ``add_``, ``copy_``, ``fill_``, ``x[i] = c``)
followed by split/cat/stack/unbind of what they wrote, and an autocast region around a run of ops
(``autocast_region``), maybe with a nested ``enabled=False`` region as Hugging Face's rotary code has;
``as_function`` turns those into ``with torch.autocast(...)`` blocks, the source Dynamo sees from a
user. What was drawn is in ``gm.meta["features"]``.
"""
from __future__ import annotations

import operator
import random
import re
import types
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


class _Builder:
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

    # -- in-place blocks and grad-mode regions (only with ``features``) ----------------------------
    def inplace(self):
        """Write in place to a value or a view of it, then (mostly) read it back through
        split/cat/stack/unbind: what issue 28's R2 programs did. Where inputs require grad only a
        fresh clone is written (eager refuses writes to leaves that require grad)."""
        rng, g = self.rng, self.graph
        clone = self.features.leaves_require_grad
        if clone:
            v = self.pick()
            base = self.push(g.call_method("clone", (v.node,)), v.shape, v.dtype)
        else:
            base = self.pick(lambda w: self.writable(w) and (self.of_input(w) or rng.random() < 0.4))
            base = base or self.pick(self.writable)
            if base is None:
                return self.unary()
        r = len(base.shape)
        where = rng.choice(["itself", "select", "slice", "narrow", "transpose"] + ([] if clone else ["split", "unbind"]))
        if where == "transpose" and r < 2:
            where = "itself"
        d = rng.randrange(r)
        n = base.shape[d]
        pieces: list[Value] = []
        if where == "itself":
            target = base
        elif where == "select":  # x[i] (dim 0) or x.select(d, i)
            i = rng.randrange(n)
            node = (g.call_function(operator.getitem, (base.node, i)) if d == 0 and rng.random() < 0.5
                    else g.call_function(torch.select, (base.node, d, i)))
            target = Value(node, base.shape[:d] + base.shape[d + 1:], base.dtype)
        elif where == "slice":  # x[a:] along d
            a = rng.randrange(n)
            node = g.call_function(operator.getitem, (base.node, (slice(None),) * d + (slice(a, None),)))
            target = Value(node, base.shape[:d] + (n - a,) + base.shape[d + 1:], base.dtype)
        elif where == "narrow":
            a = rng.randrange(n)
            ln = rng.randint(1, n - a)
            target = Value(g.call_method("narrow", (base.node, d, a, ln)), base.shape[:d] + (ln,) + base.shape[d + 1:],
                           base.dtype)
        elif where == "transpose":
            a, b = rng.sample(range(r), 2)
            shape = list(base.shape)
            shape[a], shape[b] = shape[b], shape[a]
            target = Value(g.call_method("transpose", (base.node, a, b)), tuple(shape), base.dtype)
        elif where == "split":
            k = rng.randint(1, n)
            sp = g.call_function(torch.split, (base.node, k), {"dim": d})
            sizes = [k] * (n // k) + ([n % k] if n % k else [])
            pieces = [Value(g.call_function(operator.getitem, (sp, i)), base.shape[:d] + (s,) + base.shape[d + 1:],
                            base.dtype) for i, s in enumerate(sizes)]
            target = rng.choice(pieces)
        else:  # unbind
            ub = g.call_method("unbind", (base.node, d))
            pieces = [Value(g.call_function(operator.getitem, (ub, i)), base.shape[:d] + base.shape[d + 1:], base.dtype)
                      for i in range(n)]
            target = rng.choice(pieces)
        op = rng.choice(INPLACE_OPS)
        one = 1.0 if self.dtype.is_floating_point else 1
        if op == "zero_":
            g.call_method("zero_", (target.node,))
        elif op == "mul_":
            g.call_method("mul_", (target.node, rng.choice([2, -1, 3])))
        elif op == "fill_":
            g.call_method("fill_", (target.node, one))
        elif op in ("add_", "copy_"):
            root = self._root(base.node)[0]  # a source sharing the target's memory: eager refuses
            other = self.pick(lambda w: w.shape == target.shape and w.dtype == target.dtype
                              and self._root(w.node)[0] is not root)
            src = other.node if other is not None else None
            if src is None:  # no value of that shape: a fresh one from the target itself
                src = g.call_method("sigmoid" if self.dtype.is_floating_point else "abs", (target.node,))
            g.call_method(op, (target.node, src))
        else:  # x[idx] = c
            t_r = len(target.shape)
            idx = rng.choice([0, slice(1, None), (Ellipsis, -1)] + ([(slice(None), 0)] if t_r >= 2 else []))
            if t_r == 0:
                idx = Ellipsis
            g.call_function(operator.setitem, (target.node, idx, one))
        whose = ("a clone" if clone else "an input" if base.node.op == "placeholder"
                 else "a view of an input" if self.of_input(base) else "a value")
        self.inplace_ops.append(f"{op} on {whose}{'' if where == 'itself' else ' through ' + where}")
        if target is not base and target.shape:
            self.pool.append(target)
        if where in ("split", "unbind") and rng.random() < 0.7:  # the pieces, read back
            xs = [p.node for p in pieces]
            if where == "split":
                self.push(g.call_function(torch.cat, (xs,), {"dim": d}), base.shape)
            else:
                self.push(g.call_function(torch.stack, (xs,), {"dim": d}), base.shape)
        elif rng.random() < 0.7 and r >= 1:  # the written value, split and put together again
            if rng.random() < 0.5:
                k = rng.randint(1, n)
                sp = g.call_function(torch.split, (base.node, k), {"dim": d})
                m = -(-n // k)
                xs = [g.call_function(operator.getitem, (sp, i)) for i in range(m)]
                self.push(g.call_function(torch.cat, (xs, d)), base.shape)
            else:
                ub = g.call_method("unbind", (base.node, d))
                xs = [g.call_function(operator.getitem, (ub, i)) for i in range(n)]
                self.push(g.call_function(torch.stack, (xs, d)), base.shape)

    def enter_region(self, kind: str):
        """Grad mode ``kind`` from here, spelled as Dynamo records ``with torch.no_grad():`` etc."""
        self.region = kind
        if kind == "inference_mode":
            self._inference_ctx = self.graph.call_function(torch.autograd.grad_mode._enter_inference_mode, (True,))
            self._region_start = len(self.graph.nodes)
            # AOTAutograd (torch 2.13) fails on a view of a normal tensor made in inference mode and leaves
            # the process' dispatch state broken (pytorch/pytorch#180823): the region reads outside values
            # through one pointwise op and works on what it made.
            self._outside = self.pool
            self.pool = list(self.pool)
            self.unary()
            self.pool = [self.pool[-1]]
        else:
            self.graph.call_function(torch._C._set_grad_enabled, (kind == "enable_grad",))

    def exit_region(self):
        if self.region == "inference_mode":
            self.inference_nodes.update(list(self.graph.nodes)[self._region_start:])
            self.graph.call_function(torch.autograd.grad_mode._exit_inference_mode, (self._inference_ctx,))
            self.pool = self._outside + self.pool
        else:
            self.graph.call_function(torch._C._set_grad_enabled, (self.features.grad_base,))
        self.region = None

    def split_linear(self):
        """Split the last dim, a ``linear`` per piece (each its own weight, or one weight for all), cat:
        the program whose rewrite issue 41 found changing dtypes under autocast."""
        if not self.dtype.is_floating_point:
            return self.matmul()
        v, g, rng = self.pick(), self.graph, self.rng
        k = v.shape[-1]
        size = rng.randint(1, k)
        sizes = [size] * (k // size) + ([k % size] if k % size else [])
        m = rng.choice(DIMS)
        shared = len(set(sizes)) == 1 and rng.random() < 0.5
        sp = g.call_function(torch.split, (v.node, size), {"dim": -1})
        ws = [self.add_input(f"w{len(self.inputs)}", (m, n)) for n in (sizes[:1] if shared else sizes)]
        for w in ws:
            self.pool.remove(w)
        ys = [g.call_function(F.linear, (g.call_function(operator.getitem, (sp, i)), ws[0 if shared else i].node))
              for i in range(len(sizes))]
        lowp = self.autocast[-1][2] if self.autocast and self.autocast[-1][1] else None
        self.push(g.call_function(torch.cat, (ys, -1)), v.shape[:-1] + (m * len(sizes),),
                  lowp if self.dtype == torch.float32 else None)

    def enter_autocast(self, device: str, dtype: torch.dtype, enabled: bool):
        """``with torch.autocast(device, dtype, enabled=enabled):`` from here, as Dynamo records it."""
        node = self.graph.call_function(torch.amp.autocast_mode._enter_autocast, (device, dtype, enabled, None))
        node.meta["autocast_with"] = (f"torch.autocast({device!r}, dtype={dtype}, enabled={enabled})" if enabled
                                      else f"torch.autocast({device!r}, enabled=False)")
        self.autocast.append((node, enabled, dtype))
        if enabled and self.dtype.is_floating_point:  # an op autocast casts, so the region matters
            self.matmul()

    def exit_autocast(self):
        node = self.autocast.pop()[0]
        self.graph.call_function(torch.amp.autocast_mode._exit_autocast, (node,))

    OPS = ("unary", "binary", "where", "split", "cat_or_stack", "slice", "view", "reduce", "matmul",
           "norm", "opaque")


def _viewable(t: torch.Tensor, shape) -> bool:
    try:
        t.view(shape)
        return True
    except RuntimeError:
        return False


def with_layout(t: torch.Tensor, layout: str, rng: random.Random) -> torch.Tensor:
    """``t``'s values in ``layout`` (one of ``LAYOUTS``), for inputs drawn outside ``random_graph``."""
    return _Builder(rng, t.dtype, 0).with_layout(t, layout)


def copy_with_layout(t: torch.Tensor, device: str | torch.device | None = None) -> torch.Tensor:
    """A copy of ``t`` with its sizes, strides and storage offset (``clone`` makes an expanded or
    sliced tensor contiguous), in its own storage, on ``device``: a leaf, ready for ``requires_grad_``."""
    n = t.untyped_storage().nbytes() // t.element_size()
    flat = torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage(), 0, (n,), (1,))
    flat = flat.to(device or t.device, copy=True)
    return torch.empty(0, dtype=t.dtype, device=flat.device).set_(flat.untyped_storage(), t.storage_offset(),
                                                                  t.shape, t.stride())


def random_graph(rng: random.Random, n_ops: int = 8, dtype: torch.dtype | None = None,
                 n_inputs: int | None = None, features: Features | None = None,
                 ) -> tuple[fx.GraphModule, list[torch.Tensor]]:
    """A random graph of about ``n_ops`` ops and real inputs for it (see ``Features`` for more)."""
    dtype = dtype or rng.choice(FLOAT_DTYPES + (torch.int64,))
    b = _Builder(rng, dtype, n_inputs or rng.randint(1, 3), features)
    region = features.grad_region if features is not None else None
    if region is not None:
        start = rng.randrange(n_ops)
        stop = rng.randint(start + 1, n_ops)
    autocast = features.autocast_region if features is not None else None
    spans = []  # autocast regions as [enter before op i, exit after op j - 1), outer first
    if autocast is not None:
        a = rng.randrange(n_ops)
        spans.append((a, rng.randint(a + 1, n_ops)))
        if rng.random() < features.autocast_off_inside:  # nested, as a ``with`` block must be
            a = rng.randint(spans[0][0], spans[0][1] - 1)
            spans.append((a, rng.randint(a + 1, spans[0][1])))
    for i in range(n_ops):
        for k, (a, _) in enumerate(spans):
            if i == a:
                b.enter_autocast(autocast[0], autocast[1], enabled=k == 0)
        if region is not None and i == start:
            b.enter_region(region)
        if features is not None and b.region != "inference_mode" and rng.random() < features.inplace:
            b.inplace()
        elif features is not None and features.split_linear and rng.random() < features.split_linear:
            b.split_linear()
        else:
            getattr(b, rng.choice(_Builder.OPS))()
        if region is not None and i == stop - 1:
            b.exit_region()
        for _, z in reversed(spans):
            if i == z - 1:
                b.exit_autocast()
    outs = {id(v.node): v.node for v in rng.sample(b.pool, min(len(b.pool), rng.randint(1, 3)))}
    outs[id(b.pool[-1].node)] = b.pool[-1].node
    b.graph.output(tuple(outs.values()))
    gm = fx.GraphModule(torch.nn.Module(), b.graph)
    if features is not None:
        gm.meta["features"] = {"layouts": [k for k in b.layouts if k != "contiguous"],
                               "grad_region": region, "inplace": b.inplace_ops,
                               "autocast_region": None if autocast is None else
                               f"{autocast[0]}:{str(autocast[1]).split('.')[-1]}" + ("+off" if len(spans) > 1 else "")}
    return gm, b.inputs


_ENTER = re.compile(r"^(\s*)(\w+) = torch\.amp\.autocast_mode\._enter_autocast\(")
_EXIT = re.compile(r"^\s*\w+ = torch\.amp\.autocast_mode\._exit_autocast\(")


def as_function(gm: fx.GraphModule) -> Callable:
    """``gm``'s code as a function, each autocast enter/exit pair written as a ``with torch.autocast(...)``
    block: Dynamo retracing the enter/exit calls records autocast's internals (``set_autocast_enabled``,
    …), not the ``_enter_autocast`` a user's ``with`` gives. The function's ``code`` is its source."""
    heads = {n.name: n.meta["autocast_with"] for n in gm.graph.nodes if "autocast_with" in n.meta}
    if not heads:
        return gm
    lines, depth = [], 0
    for line in gm.code.splitlines():
        if m := _ENTER.match(line):
            lines.append(f"{m[1]}{'    ' * depth}with {heads[m[2]]}:")
            depth += 1
        elif _EXIT.match(line):
            depth -= 1
        else:
            lines.append(("    " * depth if line.startswith("    ") else "") + line)
    src = "\n".join(lines) + "\n"
    scope = dict(gm.forward.__func__.__globals__) if hasattr(gm.forward, "__func__") else {}
    scope.setdefault("torch", torch)
    exec(compile(src, f"<graphgen {id(gm)}>", "exec"), scope)  # noqa: S102 — our own generated code
    fn = types.MethodType(scope["forward"], gm)
    fn.__func__.code = src
    return fn
