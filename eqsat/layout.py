"""Where a view of a chosen program lies in memory, as Inductor sees it: whether it is a contiguous
tensor of its own, a part of its buffer, or a reshape that must copy. The planner (``eqsat.fusion``)
reads it to decide which views cost a kernel."""
from __future__ import annotations

import math

from .opaque_kinds import opaque_kind
from .ops import SDPA_NAME, Ctor, Role, op_name_of_key
from .serialized import Choice, EGraphView, ENode


class Layout:
    """Layout questions about the classes of ``choice``; ``base`` maps a view's class to the class whose
    buffer it aliases (filled by the planner in producer-first order, read as it goes)."""

    def __init__(self, view: EGraphView, choice: Choice, base: dict[str, str]):
        self.view, self.choice, self.base = view, choice, base

    def node(self, cls: str) -> ENode:
        return self.view.nodes[self.choice[cls]]

    def contiguous(self, cls: str) -> bool:
        """Whether a view is laid out as its own contiguous tensor: every slice or split piece it
        takes (through reshapes and squeezes) is along the first dim of extent above 1, every
        permute keeps the order of those dims, and nothing is expanded."""
        view = self.view
        while cls != self.base.get(cls, cls):
            node = self.node(cls)
            if node.ctor == Ctor.GET and self.node(node.children[0]).ctor != Ctor.SPLIT or self.heads_back_in_place(cls):
                return True  # an output of a multi-output op
            src = self.node(node.children[0]).children[0] if node.ctor == Ctor.GET else node.children[0]
            outer, inner = view.shape.get(cls), view.shape.get(src)
            if node.ctor == Ctor.EXPAND or outer is None or inner is None:
                return False
            if node.ctor in Role.SLICE and len(outer) == len(inner):
                cut = next((d for d, (a, b) in enumerate(zip(outer, inner)) if a != b), 0)
                if math.prod(inner[:cut]) > 1:
                    return False
            if node.ctor == Ctor.PERMUTE:
                perm = next(a[1] for a in node.args if a[0] != "class")
                kept = [d for d in perm if inner[d] != 1]
                if kept != sorted(kept):
                    return False
            cls = src
        return True

    def selects_part(self, cls: str) -> bool:
        """``cls`` is a slice or a split piece of its buffer (through any views), not all of it."""
        while cls != self.base.get(cls, cls):
            if self.node(cls).ctor in Role.SLICE:
                return True
            cls = self.node(cls).children[0]
        return False

    def reshapes_a_broadcast(self, node: ENode) -> bool:
        """A reshape that merges a dim an ``expand`` grew from 1 with another dim of extent above 1
        cannot be a view (stride 0 next to a real stride): Inductor copies it. transformers'
        ``repeat_kv`` of grouped-query attention, ``k[:, :, None].expand(...).reshape(b, h, s, d)``:
        fake H200, Qwen2 and Mixtral copy k and v per layer (the model had them free)."""
        src = self.node(node.children[0])
        if src.ctor != Ctor.EXPAND:
            return False
        outer, inner = self.view.shape.get(node.children[0]), self.view.shape.get(src.children[0])
        out = self.view.shape.get(node.eclass)
        if not outer or not inner or not out:
            return False
        inner = (1,) * (len(outer) - len(inner)) + tuple(inner)
        grown = {d for d, (a, b) in enumerate(zip(outer, inner)) if a > 1 and b == 1}
        i = j = 0
        while i < len(outer) and j < len(out):  # the groups of input dims each output dim merges
            group, have, want = [i], outer[i], out[j]
            while have != want and i + 1 < len(outer) and j + 1 < len(out):
                if have < want:
                    i += 1
                    group.append(i)
                    have *= outer[i]
                else:
                    j += 1
                    want *= out[j]
            if grown & set(group) and sum(outer[d] > 1 for d in group) > 1:
                return True
            i, j = i + 1, j + 1
        return False

    def heads_back_in_place(self, cls: str) -> bool:
        """``attention(...).transpose(1, 2)`` of a call CUDA runs fused: flash and memory-efficient
        attention write their output as (batch, seq, heads, dim) and return it transposed, so the
        transpose back is contiguous (fake H200: GPT-2, Llama, Mixtral have no kernel there; the
        math decomposition's bmm output does need the copy)."""
        node = self.node(cls)
        if node.ctor != Ctor.PERMUTE or [d for d in next(a[1] for a in node.args if a[0] != "class")] != [0, 2, 1, 3]:
            return False
        src = self.node(node.children[0])
        if src.ctor != Ctor.GET:
            return False
        call = self.node(src.children[0])
        return (call.ctor == Ctor.OPAQUE and opaque_kind(call.args[0][1]) == "extern"
                and op_name_of_key(call.args[0][1]).endswith(SDPA_NAME))
