"""Small functions with known graph breaks (the mender reads this file's source)."""

import enum
import logging
import warnings

import torch

log = logging.getLogger("mend_samples")


def where_if_else(x):
    y = x * 2
    if y.sum() > 0:
        z = y + 1
    else:
        z = y * 3
    return z * 2


def where_return(x):
    y = x + 1
    if (y > 0).all():
        return y * 2
    else:
        return y + 5


def fp16_guard(h):
    h = h * 1
    # HF overflow guard (BART/Marian/LED encoder layers)
    if h.dtype == torch.float16 and (torch.isinf(h).any() or torch.isnan(h).any()):
        clamp_value = torch.finfo(h.dtype).max - 1000
        h = torch.clamp(h, min=-clamp_value, max=clamp_value)
    return h + 1


def maybe_update(x, scale):
    y = x * scale
    if y.abs().max() > 10:
        y = torch.clamp(y, min=-10.0, max=10.0)
    return y - 1


def near_miss_side_effect(x, seen):
    y = x * 2
    if y.sum() > 0:
        y = y + 1
        seen.append(1)
    return y * 2


def near_miss_shapes(x):
    y = x * 2
    if y.sum() > 0:
        z = y.sum()
    else:
        z = y
    return z + 1


def near_miss_unbound(x):
    y = x * 2
    if y.sum() > 0:
        w = y + 1
    return w * 2


def side_effects(x):
    y = x * 2
    print("y is", y, y.shape)
    log.warning("sum %s", y.sum())
    warnings.warn("careful", FutureWarning)
    y.add_(100)
    return y * 3


def print_then_raise(x, fail):
    y = x + 1
    print("before", y)
    if fail:
        raise KeyError("boom")
    return y * 2


def shadowed_print(x, print):
    y = x * 2
    print("y is", y)
    return y * 3


def guard(x):
    y = x * 2
    if (y < 0).any():
        raise ValueError("negative input")
    return y + 1


def guard_equal(mask, x):
    y = x * 2
    if not torch.equal(mask, torch.ones_like(mask)):
        raise ValueError("mask must be all ones")
    return y + 1


def guard_in_try(x):
    y = x * 2
    try:
        if (y < 0).any():
            raise ValueError("negative input")
    except ValueError:
        y = -y
    return y + 1


def guard_dynamic_message(x):
    y = x * 2
    if (y < 0).any():
        raise ValueError(f"negative input {y}")
    return y + 1


def mixed(x):
    y = x.sin()
    print("mixed", y.shape)
    if y.sum() > 0:
        y = y + 1
    return y.cos()


def mixed_factory():
    """CLI factory: (model, inputs)."""
    return mixed, (torch.arange(4.0),)


def _passthrough(fn):
    return fn


@_passthrough
def decorated_two_sites(x):
    y = x * 2
    if y.sum() > 0:
        y = y + 1
    print("y", y)
    return y * 3


def loop_break(x):
    for _ in range(2):
        x = x * 2
        if x.sum() > 0:
            x = x + 1
    return x


def print_to_buffer(x, buf):
    y = x * 2
    print("y", y, file=buf)
    return y + len(buf.getvalue())


def guard_short_circuit(x, extra):
    y = x * 2
    if (y < 0).any() or torch.isnan(extra).any():
        raise ValueError("bad input")
    return y + 1


def print_each_call(x):
    y = x * 2
    print("call", y)
    return y + 1


def arith_branch(y):
    if y.sum() > 0:
        z = y * 2
    else:
        z = y - 1
    return z * 3


def static_prefix_else(x, flag):
    y = x * 2
    if flag and y.sum() > 0:
        z = y + 1
    else:
        z = y * 3
    return z


def item_branch(x):
    y = x * 2
    has_neg = (y < 0).any().item()
    if has_neg:
        z = y.abs() + 1
    else:
        z = y - 3
    return z * 2


def item_escapes(x):
    y = x * 2
    has_neg = (y < 0).any().item()
    if has_neg:
        y = y.abs()
    return y * 2, has_neg


def count_as_size(x):
    y = x * 2
    n = (y > 0).sum().item()
    return y.new_zeros(n) + 1, y * 3


class Mode(enum.IntEnum):
    FAST = 1


def print_mixed_args(x):
    y = x * 2
    print("mode", [Mode.FAST], True, 3, 2.5, None, y.shape, [y.sum()], {"k": y})
    return y + 1


def item_shapes(x):
    y = x * 2
    flag = (y > 0).any().item()
    if flag:
        z = y.sum()
    else:
        z = y
    return z + 1
