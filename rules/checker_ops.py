"""How the checker evaluates each constructor with torch: one method per op family (``Op.evaluate``
names them), each sampling its operands in the role they play (the sizes of a split compose its
extent, a narrow stays in bounds, a second binary operand broadcasts…); ``checker.Evaluator``
binds variables and reads terms."""
from __future__ import annotations

import importlib

import torch

from eqsat import ops
from eqsat_rules import dsl
from eqsat.ops import Ctor


UNARY_KEYS = ("relu", "exp", "neg", "sigmoid", "tanh", "abs")
BINARY_KEYS = ("add", "mul", "sub", "maximum")


class Reject(Exception):
    """This instance is not one the pattern can match."""


def _torch_pointwise(key: str):
    if "(" in key:
        raise Reject(f"op key with attributes {key!r}")
    return getattr(torch, key)


def _torch_call(target: str, args: list):
    """A row's torch target (``"torch.any"``; ``"Tensor.repeat"`` is a method of the first argument)."""
    if target.startswith("Tensor."):
        return getattr(args[0], target.removeprefix("Tensor."))(*args[1:])
    module, _, name = target.rpartition(".")
    return getattr(importlib.import_module(module), name)(*args)


class _OpEvaluators:
    """The per-op half of ``Evaluator``: reads ``tensor``/``int``/``ivec``/``ev`` of the sampler."""

    def _narrow(self, t, x, d, a, m):
        X = self.tensor(x)
        D = self.int(d, 0, X.ndim - 1)
        A = self.int(a, 0, X.shape[D] - 1)
        return torch.narrow(X, D, A, self.int(m, 1, X.shape[D] - A))

    def _view(self, t, x, s):
        X = self.tensor(x)
        S = self.ivec(s, lambda: self._factor(X.numel()))
        return X.reshape(S)

    def _permute(self, t, x, p):
        X = self.tensor(x)
        return X.permute(self.ivec(p, lambda: tuple(self.rng.sample(range(X.ndim), X.ndim))))

    def _expand(self, t, x, s):
        X = self.tensor(x)
        return X.expand(self.ivec(s, lambda: tuple(self.rng.randint(1, 3) if n == 1 else n for n in X.shape)))

    def _unsqueeze(self, t, x, d):
        X = self.tensor(x)
        return X.unsqueeze(self.int(d, 0, X.ndim))

    def _squeeze(self, t, x, d):
        X = self.tensor(x)
        ones = [k for k, n in enumerate(X.shape) if n == 1]
        D = self.int(d, 0, X.ndim - 1) if not isinstance(d, dsl.Var) or id(d) in self.env or not ones \
            else self._bind(d, lambda: self.rng.choice(ones))
        if X.shape[D] != 1:
            raise Reject("squeeze of a dim that is not 1") if self.sampling else ValueError("squeeze of a non-1 dim")
        return X.squeeze(D)

    def _contiguous(self, t, x):
        return self.tensor(x).contiguous()

    def _cat(self, t, lst, d):
        dim: list = []

        def hint(ref):
            if not dim:
                dim.append(self.int(d, 0, ref.ndim - 1))
            return tuple(self.rng.randint(1, 3) if k == dim[0] else n for k, n in enumerate(ref.shape))

        xs = self.tlist(lst, hint)
        if not xs:
            raise Reject("empty cat")
        return torch.cat(xs, self.int(d, 0, xs[0].ndim - 1))

    def _stack(self, t, lst, d):
        xs = self.tlist(lst, lambda ref: tuple(ref.shape))
        if not xs:
            raise Reject("empty stack")
        return torch.stack(xs, self.int(d, 0, xs[0].ndim))

    def _split(self, t, x, s, d):
        X = self.tensor(x)
        D = self.int(d, 0, X.ndim - 1)
        S = self.ivec(s, lambda: self._composition(X.shape[D]))
        if sum(S) != X.shape[D] or min(S, default=0) < 1:
            raise Reject("split sizes do not cover the dim")
        return torch.split(X, list(S), D)

    def _get(self, t, tt, i):
        T = self.ev(tt)
        return T[self.int(i, 0, len(T) - 1)]

    def _unary(self, t, f, x):
        return _torch_pointwise(self.ev(f))(self.tensor(x))

    def _binary(self, t, f, x, y):
        X = self.tensor(x)
        F = self._bind(f, lambda: self.rng.choice(BINARY_KEYS)) if isinstance(f, dsl.Var) else f.value
        Y = self.tensor(y, self._broadcast_partner(X))
        return _torch_pointwise(F)(X, Y)

    def _broadcast_partner(self, X):
        mode = self.rng.choice(("same", "same", "scalar", "one"))
        if X.ndim == 0:
            return None
        if mode == "scalar":
            return ()
        if mode == "one":
            k = self.rng.randrange(X.ndim)
            return tuple(1 if j == k else n for j, n in enumerate(X.shape))
        return tuple(X.shape)

    def _ternary(self, t, f, c, x, y):
        C = self.tensor(c)
        X, Y = self.tensor(x, tuple(C.shape)), self.tensor(y, tuple(C.shape))
        if self.ev(f) != "where":
            raise Reject("only where")
        return torch.where(C > 0, X, Y)

    def _linear(self, t, x, w, b):
        X = self.tensor(x)
        out = self.rng.randint(1, 4)
        W = self.tensor(w, (out, X.shape[-1]))
        return torch.nn.functional.linear(X, W, self.tensor(b, (W.shape[0],)))

    def _mm(self, t, a, b):
        A = self.tensor(a, self._rand_shape(2))
        return torch.mm(A, self.tensor(b, (A.shape[-1], self.rng.randint(1, 4))))

    def _bmm(self, t, a, b):
        A = self.tensor(a, self._rand_shape(3))
        return torch.bmm(A, self.tensor(b, (A.shape[0], A.shape[-1], self.rng.randint(1, 4))))

    def _addmm(self, t, c, a, b):
        P = self._mm(t, a, b)
        return torch.addmm(self.tensor(c, P.shape[-1:] if self.rng.random() < 0.5 else P.shape), *(
            self.env[id(v)] for v in (a, b)))

    def _reduce(self, t, key, x, dims, keep):
        name = self._bind(key, lambda: self.rng.choice(reductions())) if isinstance(key, dsl.Var) else self.ev(key)
        row = ops.BY_NAME.get(name)
        if row is None or row.ctor != Ctor.REDUCE or "(" in name:
            raise Reject(f"reduction key {name!r}")
        X = self.tensor(x)
        D = self.ivec(dims, lambda: tuple(sorted(self.rng.sample(range(X.ndim), self.rng.randint(1, X.ndim)))))
        if row.one_dim and len(D) != 1:
            raise Reject(f"{name} reduces one dim")
        return _torch_call(row.torch, [X, D[0] if row.one_dim else tuple(D), bool(self.int(keep, 0, 1))])

    def _call(self, t, *args):
        """An op by its row's torch call (``Op.call``): each argument sampled as its kind says."""
        row = next(op for op in ops.ALL_OPS if op.ctor == t.fn)
        values: list = []
        for spec, a in zip(row.call, args):
            if spec.kind == "tensor":
                values.append(self.tensor(a))
            else:  # sizes: a count >= 1 per dim of the first tensor
                X = values[0]
                counts = self.ivec(a, lambda: tuple(self.rng.randint(1, 3) for _ in range(X.ndim)))
                if len(counts) != X.ndim or min(counts, default=1) < 1:
                    raise Reject(f"{t.fn}: counts {counts} for shape {tuple(X.shape)}")
                values.append(tuple(counts))
        return _torch_call(row.torch, values)

    def _softmax(self, t, key, x, d):
        X = self.tensor(x)
        return getattr(torch, self.ev(key))(X, self.int(d, 0, X.ndim - 1))


def reductions() -> list[str]:
    """The reduction keys the checker samples for a key variable of ``reduce``."""
    return [op.name for op in ops.ALL_OPS if op.ctor == Ctor.REDUCE]
