"""Helpers that mended code calls (`__mend_rt__.select(...)` etc.).

Each helper has two faces: run eagerly it does exactly what the original code did; traced by Dynamo
it takes the graph-friendly path (torch.where, an in-graph effect node, an in-graph assertion) only when a
trace-time check on tensor metadata shows the result is the same, and otherwise falls back to the
original Python (which breaks the graph, but never changes the answer).
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import re

import torch

from eqsat_torch.mend import dynamo_compat, effects, facts

# ---------------------------------------------------------------- predicated control flow


def _is_scalar_tensor(value) -> bool:
    return isinstance(value, torch.Tensor) and value.numel() == 1


def _same_meta(a, b) -> bool:
    return (
        isinstance(a, torch.Tensor)
        and isinstance(b, torch.Tensor)
        and a.shape == b.shape
        and a.dtype == b.dtype
        and a.device == b.device
        and a.requires_grad == b.requires_grad
    )


def select(cond, if_true, if_false):
    """`if_true if cond else if_false`, as `torch.where` when cond is a 1-element tensor and both
    values are tensors with identical metadata (so the choice is bit-identical)."""
    if _is_scalar_tensor(cond) and _same_meta(if_true, if_false) and cond.device == if_true.device:
        return torch.where(cond.reshape(()).bool(), if_true, if_false)
    return if_true if cond else if_false


def item_cond(value):
    """`value.item()` read only for its truth value: eagerly the item itself; traced, a copy of the
    1-element tensor (same truth value), so the `if`s it feeds can be predicated in the graph."""
    if torch.compiler.is_compiling() and _is_scalar_tensor(value):
        return value.detach().clone()
    return value.item()


def _broadcastable(tensors) -> bool:
    """Same device and broadcast-compatible shapes (a binary op between any two cannot fail)."""
    if not tensors:
        return True
    if any(t.device != tensors[0].device for t in tensors):
        return False
    for i in range(1, max(t.dim() for t in tensors) + 1):
        sizes = [t.shape[-i] for t in tensors if t.dim() >= i and t.shape[-i] != 1]
        if any(s != sizes[0] for s in sizes):
            return False
    return True


def facts_hold(values, classes, combined) -> bool:
    """Do the facts a [Where] rewrite relied on hold here: each value a tensor of its observed dtype
    class, and the `combined` ones broadcastable on one device? Static under Dynamo (metadata only)."""
    for value, cls in zip(values, classes):
        if not isinstance(value, torch.Tensor) or value.dtype not in facts.DTYPES[cls]:
            return False
    return _broadcastable(combined)


def pnot(value):
    """`not value`, kept a tensor for 1-element tensors."""
    if _is_scalar_tensor(value):
        return torch.logical_not(value.reshape(()).bool())
    return not value


def pand(left, right):
    """`left and right` on already-evaluated operands (the caller proved `right` is safe to evaluate)."""
    if _is_scalar_tensor(left) and _is_scalar_tensor(right):
        return torch.logical_and(left.reshape(()).bool(), right.reshape(()).bool())
    return left and right


def por(left, right):
    """`left or right` on already-evaluated operands (the caller proved `right` is safe to evaluate)."""
    if _is_scalar_tensor(left) and _is_scalar_tensor(right):
        return torch.logical_or(left.reshape(()).bool(), right.reshape(()).bool())
    return left or right


def tensor_equal(a, b):
    """`torch.equal(a, b)` as a 0-d tensor when shapes, dtypes and devices match statically."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape:
            return False
        if a.dtype == b.dtype and a.device == b.device:
            return (a == b).all()
    return torch.equal(a, b)


# ---------------------------------------------------------------- int tables ([Rows])

_ROWS = "_mend_rows"
_ROWS_LIMIT = 2**16  # rule_rows.LIMIT: int64 and Python ints agree on every expression it admits


def _int_rows(source):
    """`source` as a tuple of equal-length tuples of Python ints within the bound, else None."""
    if type(source) not in (list, tuple) or not 0 < len(source) < _ROWS_LIMIT:
        return None
    rows = []
    for row in source:
        if type(row) not in (list, tuple) or not row or len(row) != len(source[0]):
            return None
        if any(type(v) is not int or abs(v) >= _ROWS_LIMIT for v in row):
            return None
        rows.append(tuple(row))
    return tuple(rows)


def int_table(tensor, source):
    """`torch.as_tensor(source, dtype=torch.long)` that also keeps `source`'s ints on the fresh tensor."""
    rows = _int_rows(source)
    if rows is not None and isinstance(tensor, torch.Tensor) and tensor.dtype == torch.int64 \
            and tuple(tensor.shape) == (len(rows), len(rows[0])):
        setattr(tensor, _ROWS, rows)
    return tensor


def table_rows(table, width, limit):
    """What `for ... in table` iterates: eagerly `table` itself; traced, the ints `int_table` kept (rows of
    `width`, every |value| below `limit`, the bound the loop's uses need), with an in-graph assertion that
    the table still holds them (an in-place write fails loudly)."""
    rows = getattr(table, _ROWS, None) if isinstance(table, torch.Tensor) else None
    if not torch.compiler.is_compiling() or rows is None or len(rows[0]) != width:
        return table
    if any(abs(v) >= limit for row in rows for v in row):
        return table
    if table.dtype != torch.int64 or tuple(table.shape) != (len(rows), width) \
            or torch.get_default_dtype() not in (torch.float32, torch.float64):
        return table
    held = torch.eq(table, torch.tensor(rows, dtype=table.dtype, device=table.device)).all()
    dynamo_compat.assert_async(held, "mend: an int table was written in place after it was made; "
                                     "the mended loop over it cannot use the values it was made from")
    return rows


# ---------------------------------------------------------------- deferred side effects


def defer(module, receiver, method, args, kwargs, where=None):
    """Call `receiver.method(*args, **kwargs)` (or `receiver(...)` when method is None), where
    `receiver` names a global or builtin of `module`; `where` = (file, line) for `warnings.warn`.

    Eagerly it runs now. Under Dynamo it becomes a side-effecting `mend::emit` node that runs the
    call when the graph runs, in program order, with the tensors as they were here (cloned).
    """
    if torch.compiler.is_compiling():
        effects.emit_in_graph((module, receiver, method, where), args, kwargs)
        return
    effects.emit_now(module, receiver, method, where, args, kwargs)


# ---------------------------------------------------------------- predicated validation

_TRAP = re.compile(r"\[\[mend-trap (\w+)\]\](.*?)\[\[/mend-trap\]\]", re.S)


def trap(cond, exc_type, message):
    """`if cond: raise exc_type(message)`; traced, an in-graph assertion carrying type and message."""
    if torch.compiler.is_compiling() and _is_scalar_tensor(cond):
        tagged = f"[[mend-trap {exc_type.__name__}]]{message}[[/mend-trap]]"
        dynamo_compat.assert_async(torch.logical_not(cond.reshape(()).bool()), tagged)
        return
    if cond:
        raise exc_type(message)


def restored_exception(err: BaseException) -> BaseException:
    """The exception the original code raised, for a failed in-graph assertion (else `err`)."""
    match = _TRAP.search(str(err))
    exc_type = getattr(builtins, match.group(1), None) if match else None
    if isinstance(exc_type, type) and issubclass(exc_type, Exception):
        return exc_type(match.group(2))
    return err


@contextlib.contextmanager
def boundary():
    """Wrap a compiled call so a failed in-graph trap re-raises the original exception type.
    (Deferred effects need no boundary: they run inside the graph.)"""
    try:
        yield
    except Exception as err:
        restored = restored_exception(err)
        if restored is err:
            raise
        raise restored from err


def compile(model, **compile_kwargs):
    """`torch.compile(model)` whose every call runs inside `boundary()`."""
    compiled = torch.compile(model, **compile_kwargs)

    @functools.wraps(getattr(model, "forward", model))
    def call(*args, **kwargs):
        with boundary():
            return compiled(*args, **kwargs)

    call.compiled = compiled
    return call
