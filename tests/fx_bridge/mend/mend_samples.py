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


def rows_proposals(x, levels):
    """Grounding-DINO's proposal loop: a table's values as slice bounds, view and linspace sizes."""
    shape_list = list(levels)
    shapes = torch.as_tensor(shape_list, dtype=torch.long)
    out = []
    pos = 0
    for level, (h, w) in enumerate(shapes):
        piece = x[:, pos : pos + h * w].view(x.shape[0], h, w)
        grid = torch.linspace(0.5, h - 0.5, h, dtype=torch.float32)
        out.append((piece.sum(-1) * grid).flatten(1) / (x[:, None, level] * w))
        pos += h * w
    return torch.cat(out, -1)


def rows_made_by_caller(x):
    shape_list = [(4, 4), (2, 2)]
    shapes = torch.as_tensor(shape_list, dtype=torch.long)
    return rows_reference_points(x, shapes)


def rows_reference_points(x, shapes):
    refs = []
    for level, (h, w) in enumerate(shapes):
        ref = torch.linspace(0.5, h - 0.5, h, dtype=torch.float32)
        refs += [ref[None] / (x[:, None, level] * h), x[:, None, level] * w]
    return torch.cat(refs, -1)


def rows_written_in_place(x, bump):
    shape_list = [(4, 4), (2, 2)]
    shapes = torch.as_tensor(shape_list, dtype=torch.long)
    if bump:
        shapes.sub_(1)  # (3, 3), (1, 1): a mended loop must not use the list's ints
    return rows_reference_points(x, shapes)


def rows_value_escapes(x):
    shape_list = [(4, 4), (2, 2)]
    shapes = torch.as_tensor(shape_list, dtype=torch.long)
    sizes = []
    for h, w in shapes:
        sizes.append(h)  # a 0-d tensor in the list; an int after the rewrite
        x = x[:, : h * w]
    return x.sum(), sizes


def rows_int32_table(x):
    shape_list = [(4, 4), (2, 2)]
    shapes = torch.as_tensor(shape_list, dtype=torch.int32)  # not int64: no proof the ints agree
    for h, w in shapes:
        x = x[:, : h * w]
    return x.sum()


def rows_table_of_floats(x):
    shape_list = [(4.0, 4.0), (2.0, 2.0)]  # integral floats: the tensor is int64, but the list holds no ints
    shapes = torch.as_tensor(shape_list, dtype=torch.long)
    return rows_reference_points(x, shapes)


class MemoRope(torch.nn.Module):
    """Phi-3 LongRoPE's shape: a data-dependent branch that memoises a table and rebinds a buffer."""

    def __init__(self):
        super().__init__()
        self.register_buffer("inv_freq", torch.ones(3), persistent=False)
        self.original_inv_freq = self.inv_freq

    def forward(self, x):
        if x.max() > 3:
            if not hasattr(self, "long_inv_freq"):
                self.long_inv_freq = torch.full((3,), 0.5, device=x.device)
            self.register_buffer("inv_freq", self.long_inv_freq, persistent=False)
        else:
            self.original_inv_freq = self.original_inv_freq.to(x.device)
            self.register_buffer("inv_freq", self.original_inv_freq, persistent=False)
        return x * self.inv_freq


def rows_divides_a_tensor(x):
    shape_list = [(4, 4), (2, 2)]
    shapes = torch.as_tensor(shape_list, dtype=torch.long)
    out = []
    for h, w in shapes:
        out.append(h / x[:, None, :w])  # complex `tensor(0) / 0` and `0 / 0` differ
    return out
