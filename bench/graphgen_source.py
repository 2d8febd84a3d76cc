"""A drawn graph as Python source a user would write: its autocast enter/exit calls as
``with torch.autocast(...)`` blocks (what Dynamo must see to record them as a user's)."""
from __future__ import annotations

import re
import types
from typing import Callable

import torch
import torch.fx as fx


_ENTER = re.compile(r"^(\s*)(\w+) = torch\.amp\.autocast_mode\._enter_autocast\(")
_EXIT = re.compile(r"^\s*\w+ = torch\.amp\.autocast_mode\._exit_autocast\(")


def as_function(gm: fx.GraphModule) -> Callable:
    """``gm``'s code as a function, each autocast enter/exit pair written as a ``with torch.autocast(...)``
    block: Dynamo retracing the enter/exit calls records autocast's internals (``set_autocast_enabled``,
    …), not the ``_enter_autocast`` a user's ``with`` gives. The function's ``code`` is its source."""
    heads = {n.name: n.meta["autocast_with"] for n in gm.graph.nodes if "autocast_with" in n.meta}
    if not heads:
        return gm
    lines, depth = [], 0
    for line in gm.code.splitlines():
        if m := _ENTER.match(line):
            lines.append(f"{m[1]}{'    ' * depth}with {heads[m[2]]}:")
            depth += 1
        elif _EXIT.match(line):
            depth -= 1
        else:
            lines.append(("    " * depth if line.startswith("    ") else "") + line)
    src = "\n".join(lines) + "\n"
    scope = dict(gm.forward.__func__.__globals__) if hasattr(gm.forward, "__func__") else {}
    scope.setdefault("torch", torch)
    exec(compile(src, f"<graphgen {id(gm)}>", "exec"), scope)  # noqa: S102 — our own generated code
    fn = types.MethodType(scope["forward"], gm)
    fn.__func__.code = src
    return fn
