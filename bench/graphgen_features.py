"""The draws ``Features`` asks for, beside the plain ops: in-place blocks on inputs and views of
inputs, grad-mode regions, split -> linear per piece -> cat, and autocast regions."""
from __future__ import annotations

import operator

import torch
import torch.nn.functional as F

from bench.graphgen_ops import DIMS, INPLACE_OPS, Value


class _FeatureDraws:
    """A mixin of ``_Builder``: reads the pool and drawing helpers of ``_OpDraws``."""

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
