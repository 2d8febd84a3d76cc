"""What lowering produces (:class:`Lowered` and the value kinds it maps FX nodes to) and the
:class:`Unsupported` refusal, shared by lowering, raising and the safety checks."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from eqsat.terms import KeyTable, Program, Ref, Term
from eqsat_torch.lowering.symbolic import SymbolicSizes


class Unsupported(Exception):
    """The graph is outside what the optimizer can rewrite safely; the reason says why."""


@dataclass
class TupleVal:
    """A multi-output value: ``piece(i)`` is the Ref of output i (bound lazily)."""

    piece: Callable[[int], Ref]
    n: int
    tup: Ref  # the TTuple term the pieces are read from


@dataclass
class OpaqueSpec:
    """How to rebuild an opaque node: its FX op and target, args with tensor slots, output kind."""

    op: str
    target: Any
    args: tuple
    kwargs: dict
    out: str  # "tensor" | "tuple" | "none" | "scalar" (a data-dependent SymInt/SymBool/SymFloat)
    label: str
    no_grad: bool = False  # a view made inside a ``no_grad`` region: raised inside one (``_Lowerer.escaped``)


@dataclass
class Slot:
    index: int


@dataclass
class Lowered:
    gm: torch.fx.GraphModule
    program: Program = field(default_factory=Program)         # lets and facts, for Session.load
    roots: list[str] = field(default_factory=list)           # lets the program must produce
    output: Any = None                                       # output structure with Ref/const leaves
    node_of_let: dict[str, torch.fx.Node] = field(default_factory=dict)
    originals: dict[str, Term] = field(default_factory=dict)
    keys: KeyTable = field(default_factory=KeyTable)
    opaque: dict[str, OpaqueSpec] = field(default_factory=dict)
    placeholders: list[torch.fx.Node] = field(default_factory=list)
    shapes: dict[str, tuple] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)
    params: set[str] = field(default_factory=set)
    values: dict[torch.fx.Node, Any] = field(default_factory=dict)  # FX node → Ref/TupleVal/const
    dialect: str = "torch"                                   # "torch" (Dynamo) | "aten" (post-grad)
    sizes: SymbolicSizes = field(default_factory=SymbolicSizes)  # encoding of symbolic sizes
    reads: dict[torch.fx.Node, dict[torch.fx.Node, Any]] = field(default_factory=dict)  # reads across a no_grad boundary
    grad_dead: set[str] = field(default_factory=set)  # lets that require grad yet pass none to an output

    def read(self, n: torch.fx.Node, a: torch.fx.Node) -> Any:
        """What node ``n`` read for its input ``a``: inside a ``no_grad`` region a value carrying
        autograd history is read through ``detach``, outside one a view made inside it is read as
        its remake (``_Lowerer.escaped``); a copy of ``n`` must read that too."""
        return self.reads.get(n, {}).get(a, self.values.get(a))

    @property
    def num_terms(self) -> int:
        return len(self.originals)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _norm_dim(d: int, rank: int) -> int:
    if not -max(rank, 1) <= d < max(rank, 1):
        raise Unsupported(f"dim {d} out of range for rank {rank}")
    return d % rank if rank else 0
