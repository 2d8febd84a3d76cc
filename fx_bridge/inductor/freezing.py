"""Inductor's freezing passes as a probe runs them: the freezing patterns and the constant folding of
what only parameters feed."""
from __future__ import annotations

import torch


def _freezing_patterns(gm: torch.fx.GraphModule, inputs: list, constants: frozenset,
                       fake_mode) -> tuple[torch.fx.GraphModule, list]:
    """What Inductor's ``freeze`` does to the frozen graph beyond folding: the constant inputs become
    constants (``get_attr``) and its freezing patterns run (``freezing_patterns.pass_patterns``; on a
    GPU the concat-linear ones: 2 or 3 matmuls of one input and constant weights become one matmul of
    the concatenated weights, which Llama's q/k/v and gate/up are); what only constants then feed
    (the concatenated weights) is folded. ``freeze``'s CSE comes first, as there. Without this, Inductor alone was counted 3 launches a Llama
    layer more than it makes under ``freezing`` (issue 42: 31 counted, 25 on an H100)."""
    from torch._functorch.compile_utils import fx_graph_cse
    from torch._inductor.fx_passes import freezing_patterns

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i in sorted(constants):
        name = f"_probe_constant_{i}"
        gm.register_buffer(name, inputs[i])  # a buffer: a plain tensor attribute makes get_attr warn
        with gm.graph.inserting_before(placeholders[i]):
            attr = gm.graph.get_attr(name)
        attr.meta = dict(placeholders[i].meta)
        placeholders[i].replace_all_uses_with(attr)
        gm.graph.erase_node(placeholders[i])
    inputs = [x for i, x in enumerate(inputs) if i not in constants]
    gm.graph = fx_graph_cse(gm.graph)  # as ``freeze`` does: one input view for the three of q/k/v
    _fold_constants(gm)  # the transposed weights the patterns match must be constants themselves
    freezing_patterns.lazy_init()
    for patterns in freezing_patterns.pass_patterns:
        patterns.apply(gm.graph)
    _fold_constants(gm)
    _inline_small_constants(gm)
    gm.recompile()
    return gm, inputs


def _inline_small_constants(gm: torch.fx.GraphModule) -> None:
    """A constant Inductor inlines into the kernels that read it (a 0-d one as its ``item()``, a 1-d
    one of at most 8 values as its list: ``GraphLowering.get_attr``) becomes a ``full`` of its shape,
    which Inductor inlines the same way: a fake constant has no values to read (Gemma-2's embedding
    scale under freezing failed every probe). The value stands in for the unknown one; it is no
    identity (1, 0) that a lowering could simplify away."""
    from torch._inductor.graph import GraphLowering

    for node in list(gm.graph.nodes):
        value = getattr(gm, node.target) if node.op == "get_attr" else None
        if not isinstance(value, torch.Tensor) or not (value.dim() == 0 or GraphLowering.can_inline_constant(value)):
            continue
        fill = True if value.dtype == torch.bool else 0.5 if value.dtype.is_floating_point or value.dtype.is_complex else 3
        with gm.graph.inserting_before(node):
            full = gm.graph.call_function(torch.ops.aten.full.default, (list(value.shape), fill),
                                          {"dtype": value.dtype, "device": value.device, "pin_memory": False})
        full.meta = dict(node.meta)
        node.replace_all_uses_with(full)
        gm.graph.erase_node(node)


def _fold_constants(gm: torch.fx.GraphModule) -> None:
    """Each node that only constants feed becomes a constant, as freezing's ``constant_fold`` makes it."""
    for node in list(gm.graph.nodes):
        args = node.all_input_nodes
        if node.op != "call_function" or not args or any(a.op != "get_attr" for a in args):
            continue
        value = node.target(*torch.fx.node.map_arg(node.args, lambda a: getattr(gm, a.target)),
                            **torch.fx.node.map_arg(node.kwargs, lambda a: getattr(gm, a.target)))
        if not isinstance(value, torch.Tensor):
            continue
        name = f"_probe_constant_{node.name}"
        gm.register_buffer(name, value)
        with gm.graph.inserting_before(node):
            attr = gm.graph.get_attr(name)
        attr.meta = {**node.meta, "val": value}
        node.replace_all_uses_with(attr)
        gm.graph.erase_node(node)
    gm.graph.eliminate_dead_code()
