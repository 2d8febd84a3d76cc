"""Deferred effects inside the compiled graph: a side-effecting custom op, `mend::emit`.

A traced `defer(...)` becomes one `mend::emit(tensors, ints, floats, site)` node. The call's static
part (callee, strings, classes, structure) is registered once at trace time through
`torch.compiler.assume_constant_result`, so the graph holds only an int `site`; tensors (cloned at the
call, so later in-place updates do not show), ints and floats (possibly symbolic under dynamic shapes)
travel as op arguments. The op is marked side-effecting, so no backend drops it, and it runs the real
print/log/warn when the graph runs, in program order, with no buffer and no compile boundary.
"""

from __future__ import annotations

import builtins
import sys
import warnings

import torch
from torch.fx.node import has_side_effect

from eqsat_torch.mend import dynamo_compat


class _TensorSlot:
    """Template marker: the next tensor argument of the op."""


class _IntSlot:
    """Template marker: the next int argument of the op."""


class _FloatSlot:
    """Template marker: the next float argument of the op."""


class _SizeNode:
    """Template marker: `(_SizeNode, items)` is rebuilt as `torch.Size(items)`."""


_SITES: list[tuple] = []


@torch.compiler.assume_constant_result
def _register(site: tuple) -> int:
    """Runs once per trace (Dynamo keeps the result as a constant): the site's index."""
    _SITES.append(site)
    return len(_SITES) - 1


def _encode(value, tensors: list, ints: list, floats: list):
    """`value` with its tensors and numbers replaced by slot markers (appended to the lists)."""
    if isinstance(value, torch.Tensor):
        tensors.append(value.detach().clone())
        return _TensorSlot
    if type(value) is int:  # also a SymInt under Dynamo, which reports it as int (not bools or IntEnums)
        ints.append(value)
        return _IntSlot
    if type(value) is float:
        floats.append(value)
        return _FloatSlot
    if type(value) is torch.Size:
        return (_SizeNode, tuple(_encode(v, tensors, ints, floats) for v in value))
    if type(value) is tuple:  # not namedtuples: those would be rebuilt as plain tuples
        return tuple(_encode(v, tensors, ints, floats) for v in value)
    if type(value) is list:
        return [_encode(v, tensors, ints, floats) for v in value]
    if type(value) is dict:
        return {k: _encode(v, tensors, ints, floats) for k, v in value.items()}
    return value  # a constant to Dynamo (a class, a dtype), else `_register` breaks the graph


def _decode(template, tensors, ints, floats):
    if template is _TensorSlot:
        return next(tensors)
    if template is _IntSlot:
        return next(ints)
    if template is _FloatSlot:
        return next(floats)
    if type(template) is tuple and template and template[0] is _SizeNode:
        return torch.Size(_decode(v, tensors, ints, floats) for v in template[1])
    if type(template) is tuple:
        return tuple(_decode(v, tensors, ints, floats) for v in template)
    if type(template) is list:
        return [_decode(v, tensors, ints, floats) for v in template]
    if type(template) is dict:
        return {k: _decode(v, tensors, ints, floats) for k, v in template.items()}
    return template


def _resolve(module: str, receiver: str):
    """`receiver` ("logger", "print", "warnings.warn") as the global/builtin it names in `module`."""
    head, *rest = receiver.split(".")
    namespace = vars(sys.modules[module])
    obj = namespace[head] if head in namespace else getattr(builtins, head)
    for attr in rest:
        obj = getattr(obj, attr)
    return obj


def _warn_args(args, kwargs):
    message = args[0] if args else kwargs["message"]
    category = args[1] if len(args) > 1 else kwargs.get("category")
    if category is None:
        category = message.__class__ if isinstance(message, Warning) else UserWarning
    return message, category


def emit_now(module, receiver, method, where, args, kwargs) -> None:
    """Run the effect: `receiver.method(*args, **kwargs)` (or `receiver(...)`), `receiver` a global or
    builtin of `module`; `warnings.warn` is replayed at its original `where` = (file, line)."""
    if where is not None:
        message, category = _warn_args(args, kwargs)
        registry = vars(sys.modules[module]).setdefault("__warningregistry__", {})
        warnings.warn_explicit(message, category, where[0], where[1], module, registry)
        return
    target = _resolve(module, receiver)
    (getattr(target, method) if method else target)(*args, **kwargs)


@torch.library.custom_op("mend::emit", mutates_args=())
def _emit_op(tensors: list[torch.Tensor], ints: list[int], floats: list[float], site: int) -> None:
    head, template = _SITES[site]
    args, kwargs = _decode(template, iter(tensors), iter(ints), iter(floats))
    emit_now(*head, args, kwargs)


@_emit_op.register_fake
def _emit_fake(tensors, ints, floats, site) -> None:
    return None


has_side_effect(torch.ops.mend.emit.default)  # FX dead-code elimination keeps it
dynamo_compat.mark_ordered_effect(_emit_op)  # AOTAutograd threads an effect token: passes keep program order


def emit_in_graph(head: tuple, args: tuple, kwargs: dict) -> None:
    """Under Dynamo: record the call `head` (module, receiver, method, where) as one graph node."""
    tensors: list = []
    ints: list = []
    floats: list = []
    template = _encode((args, kwargs), tensors, ints, floats)
    # An op reading no buffer lets Inductor (2.13, CPU) fuse a kernel from before it with one after it while
    # freeing that kernel's buffers at the op: `UnboundLocalError: buf44` (PLBart fp16). An empty
    # tensor made here gives the op a producer to be scheduled after.
    anchor = torch.empty(0)  # no kernel, only an allocation
    torch.ops.mend.emit(tensors + [anchor], ints, floats, _register((head, template)))
