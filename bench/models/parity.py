"""Issue 18's parity programs: the split/cat/stack/unbind shapes and batch fusions greedy Optimus handles,
written the way Optimus' own pattern tests exercise them (constants built inside the graph, pieces
among other tensors), as one benchmark model each (``parity_<name>``).

tests/rules/test_split_cat_parity.py checks each against eager and names the rule it needs; the
harness compares Inductor, Inductor+Optimus and eqsat on them (inference and training).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from bench.models.sizes import finish, pick, randn, seeded


def _ones(x, *shape):
    return x.new_ones(shape)




def cat_run_with_others(x):
    """A run of every piece between two other tensors, on the split dim."""
    return torch.cat([_ones(x, 2, 5, 32, 16), *torch.split(x, 4, dim=1), _ones(x, 2, 6, 32, 16)], dim=1)


def cat_partial_run_with_others(x):
    """Pieces 1..5 of eight between two other tensors: one narrow."""
    s = torch.split(x, 4, dim=1)
    return torch.cat([_ones(x, 2, 5, 32, 16), *s[1:6], _ones(x, 2, 6, 32, 16)], dim=1)


def cat_other_dim_with_others(x):
    """Every piece of a split on dim 1, between two other tensors, concatenated on dim 2."""
    return torch.cat([_ones(x, 2, 4, 32, 16), *torch.split(x, 4, dim=1), _ones(x, 2, 4, 32, 16)], dim=2)


def cat_other_dim_two_runs(x):
    """Optimus' input_shuffling_dim_mismatch: two runs of pieces among other tensors, on dim 2."""
    s = torch.split(x, 4, dim=1)
    one = _ones(x, 2, 4, 32, 16)
    return torch.cat([one, s[1], s[2], s[3], one, s[5], s[6], s[7], one], dim=2)


def cat_other_dim_last(x):
    """A run of pieces then another tensor, concatenated on the last dim."""
    s = torch.split(x, 4, dim=1)
    return torch.cat([*s[2:6], _ones(x, 2, 4, 32, 16)], dim=3)


def stack_run_with_others(x):
    """Optimus' split_stack_addn_args: every piece between other tensors, stacked on dim 1."""
    s = torch.split(x, 4, dim=1)
    return torch.stack([_ones(x, 2, 4, 32, 16), *s, _ones(x, 2, 4, 32, 16), _ones(x, 2, 4, 32, 16)], dim=1)


def stack_two_runs_other_dim(x):
    """Optimus' input_shuffling_dim_mismatch_stack: two runs among other tensors, stacked on dim 2."""
    s = torch.split(x, 4, dim=1)
    one = _ones(x, 2, 4, 32, 16)
    return torch.stack([one, s[1], s[2], s[3], one, s[5], s[6], s[7], one], dim=2)


def unbind_cat_with_others(x):
    """Optimus' unbind_cat_addn_args: every unbind piece between two other tensors."""
    return torch.cat([_ones(x, 2, 32, 16), *torch.unbind(x, dim=1), _ones(x, 2, 32, 16)], dim=1)


def unbind_cat_runs_other_dim(x):
    """Two runs of unbind pieces among another tensor, concatenated on the last dim."""
    s = torch.unbind(x, dim=1)
    return torch.cat([_ones(x, 2, 32, 16), *s[3:9], _ones(x, 2, 32, 16), *s[12:20]], dim=2)


def shuffled_multiple_outputs(x):
    """Optimus' input_shuffling_multiple_output: a run in a cat on another dim, a run in a stack, a piece
    used elsewhere."""
    s = torch.split(x, 4, dim=1)
    cat1 = torch.cat([_ones(x, 2, 4, 32, 16), s[1], s[2], s[3], _ones(x, 2, 4, 32, 16)], dim=2)
    stack1 = torch.stack([_ones(x, 2, 4, 32, 16), s[4], s[5], _ones(x, 2, 4, 32, 16)], dim=1)
    return cat1, stack1, torch.relu(s[6])


def unequal_split_multiple_outputs(x):
    """Optimus' unequal_split_multiple_output: the same, the runs of equal pieces inside an uneven split."""
    s = torch.split(x, [2, 4, 4, 4, 4, 4, 8, 2], dim=1)
    cat1 = torch.cat([_ones(x, 2, 4, 32, 16), s[1], s[2], s[3], _ones(x, 2, 4, 32, 16)], dim=2)
    stack1 = torch.stack([_ones(x, 2, 4, 32, 16), s[4], s[5], _ones(x, 2, 4, 32, 16)], dim=1)
    return cat1, stack1, torch.relu(s[6])


def unbind_stack_with_others(x):
    """Optimus' unbind_stack_addn_args shape: every unbind piece between two other tensors, stacked."""
    return torch.stack([_ones(x, 2, 32, 16), *torch.unbind(x, dim=1), _ones(x, 2, 32, 16)], dim=1)


def unbind_stack_runs_last_dim(x):
    """Two runs of unbind pieces among another tensor, stacked on a new last dim."""
    s = torch.unbind(x, dim=1)
    return torch.stack([_ones(x, 2, 32, 16), *s[3:9], _ones(x, 2, 32, 16), *s[12:20]], dim=3)


def two_splits_interleaved(x, x2):
    """Optimus' multi_split_cat: runs of two splits of two inputs interleaved in one cat and one stack."""
    a, b = torch.split(x, 4, dim=1), torch.split(x2, 4, dim=1)
    one = _ones(x, 2, 4, 32, 16)
    cat1 = torch.cat([one, a[1], a[2], a[3], one, b[1], b[2], b[3], one], dim=2)
    stack1 = torch.stack([one, a[4], a[5], one, b[4], b[5], one], dim=1)
    return cat1, stack1, torch.relu(a[6]), torch.relu(b[6])



def uneven_split_then_split(x):
    """Optimus' merge_splits shape: an uneven split, one piece split again, pieces recombined."""
    a, b, c = torch.split(x, [4, 20, 8], dim=1)
    b1, b2 = torch.split(b, [12, 8], dim=1)
    return torch.cat([b2, a, b1], dim=1).relu(), c.sigmoid()


def split_getitems_out_of_order(x):
    """getitems of a split with a gap and out of order, each used once: pure views."""
    s = torch.split(x, 4, dim=1)
    return torch.cat([s[3], s[1], s[0]], dim=1)


def dropouts(x):
    """Optimus' batch_dropout shape: several dropouts (active) on the pieces of a split."""
    return torch.cat([F.dropout(p, 0.1, training=True) for p in torch.split(x, 8, dim=1)], dim=1)


def math_chain(x):
    """A chain of pointwise math on split pieces, recombined."""
    return torch.cat([torch.log1p(torch.exp(p).clamp(max=10.0)).tanh() for p in torch.split(x, 8, dim=1)], dim=1)


def bmm_accumulate(x):
    """A batch of bmms accumulated in place (``out += bmm(...)``), on pieces of one input."""
    q = x.flatten(0, 1)                               # (64, 32, 16)
    out = torch.zeros_like(q[:, :, :8].transpose(1, 2) @ q[:, :, :8])
    for k in torch.split(q, 4, dim=2):
        out += torch.bmm(k.transpose(1, 2), k)[:, :4, :4].repeat(1, 2, 2)
    return out


PROGRAMS = {f.__name__: f for f in (
    cat_run_with_others, cat_partial_run_with_others, cat_other_dim_with_others, cat_other_dim_two_runs,
    cat_other_dim_last, stack_run_with_others, stack_two_runs_other_dim, unbind_cat_with_others,
    unbind_cat_runs_other_dim, shuffled_multiple_outputs, unequal_split_multiple_outputs,
    two_splits_interleaved, unbind_stack_with_others, unbind_stack_runs_last_dim,
    uneven_split_then_split, split_getitems_out_of_order, dropouts, math_chain, bmm_accumulate)}


class Program(nn.Module):
    """A parity program as a module (no parameters: the program is the point)."""

    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, *xs):
        return self.f(*xs)


# -- the batch-fusion programs, with parameters (training matters for these) ----------------------
class TenLinears(nn.Module):
    """Ten linears of one shape on ten different inputs (batch_linear), summed."""

    def __init__(self, n=10, dim=32):
        super().__init__()
        self.linears = nn.ModuleList(nn.Linear(dim, dim) for _ in range(n))

    def forward(self, x):
        return sum(torch.relu(l(p)) for l, p in zip(self.linears, x.unbind(0)))


class LinearOnSplitPieces(nn.Module):
    """``F.linear`` of each of five split pieces with its own weight, recombined."""

    def __init__(self, n=5, dim=16):
        super().__init__()
        self.w = nn.Parameter(torch.randn(n, dim, dim) / dim ** 0.5)
        self.b = nn.Parameter(torch.zeros(n, dim))

    def forward(self, x):
        pieces = torch.split(x, x.shape[1] // len(self.w), dim=1)
        return torch.cat([F.linear(p, w, b) for p, w, b in zip(pieces, self.w, self.b)], dim=1)


class LinearBatchNormBranches(nn.Module):
    """Three Linear → BatchNorm branches, then linears, cat, sigmoid."""

    def __init__(self, dim=32):
        super().__init__()
        self.pre = nn.ModuleList(nn.Sequential(nn.Linear(dim, dim), nn.BatchNorm1d(dim)) for _ in range(3))
        self.post = nn.ModuleList(nn.Linear(dim, dim) for _ in range(3))

    def forward(self, x):
        return torch.sigmoid(torch.cat([q(p(x)) for p, q in zip(self.pre, self.post)], dim=1))


class BatchedLayerNorms(nn.Module):
    """Layer norms of one shape on the pieces of a split (batch_layernorm), recombined."""

    def __init__(self, n=8, dim=16):
        super().__init__()
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(n))

    def forward(self, x):
        pieces = torch.split(x, x.shape[1] // len(self.norms), dim=1)
        return torch.cat([torch.tanh(n(p)) for n, p in zip(self.norms, pieces)], dim=1)


class GroupLinear(nn.Module):
    """Linears of different shapes on different inputs (group_linear), outputs concatenated."""

    def __init__(self, dims=((16, 8), (32, 24), (24, 16), (8, 32))):
        super().__init__()
        self.dims = dims
        self.linears = nn.ModuleList(nn.Linear(i, o) for i, o in dims)

    def forward(self, x):
        pieces = torch.split(x, [i for i, _ in self.dims], dim=1)
        return torch.cat([torch.relu(l(p)) for l, p in zip(self.linears, pieces)], dim=1)


def _program_builder(f):
    def build(size: str | int = "small", device="cpu", dtype=torch.float32):
        gen = seeded(18)  # the shapes are the programs' own (their constants are sized for them): no size knob
        xs = tuple(randn(gen, 2, 32, 32, 16, device=device, dtype=dtype)
                   for _ in range(f.__code__.co_argcount))
        return finish(Program(f), xs, device, dtype)
    return build


def _module_builder(cls, shape):
    def build(size: str | int = "small", device="cpu", dtype=torch.float32):
        gen = seeded(18)
        batch = pick(size, tiny=4, small=64, medium=512, large=4096)
        x = randn(gen, *shape(batch), device=device, dtype=dtype)
        return finish(cls(), (x,), device, dtype)
    return build


BUILDERS = {f"parity_{name}": _program_builder(f) for name, f in PROGRAMS.items()} | {
    "parity_ten_linears": _module_builder(TenLinears, lambda b: (10, b, 32)),
    "parity_linear_on_split_pieces": _module_builder(LinearOnSplitPieces, lambda b: (b, 80)),
    "parity_linear_batchnorm_branches": _module_builder(LinearBatchNormBranches, lambda b: (b, 32)),
    "parity_batched_layernorms": _module_builder(BatchedLayerNorms, lambda b: (b, 128)),
    "parity_group_linear": _module_builder(GroupLinear, lambda b: (b, 80)),
}
