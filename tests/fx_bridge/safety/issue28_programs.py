"""The programs issue 28's R1–R3 found eqsat silently wrong on, shared by their regression tests
(``test_layout_storage_grad_mode.py``) and the soak's (``test_soak_programs.py``)."""
import torch


# R1: outputs whose strides a rewrite changed
def cat_of_split(x):
    return torch.cat(torch.split(x, 1, 0), 0)


def stack_of_unbind(x):
    return torch.stack(torch.unbind(x, -1), -1)


def transposed():
    return torch.randn(6, 4).t()


def channels_last():
    return torch.randn(2, 8, 4, 4).to(memory_format=torch.channels_last)


# R2: outputs that shared a mutated input's storage (post-grad pass)
def zero_then_cat(x):
    a, b = torch.split(x, 2, 0)
    a.zero_()
    return torch.cat([a, b], 0)


def setitem_then_stack(x):
    x[0] = 1.0
    return torch.stack(torch.unbind(x, 0), 0)


def mutated_view_then_cat(x):
    y = x[1:]
    y.mul_(2)
    return torch.cat(torch.split(x, 1, 0), 0)


# R3: a gradient wrong around a no_grad block
def no_grad_cat(w):
    with torch.no_grad():
        s = torch.cat(torch.split(w, 2, 1), 1)
    return w.sigmoid() * s
