"""Terms printed the way the rule author wrote them (torch spelling), for docs and messages."""
from __future__ import annotations

from . import dsl

_TORCH_NAME = {sig.ctor: name for name, sig in reversed(dsl.SIGNATURES.items())}
_INFIX = {"+": "+", "-": "-", "*": "*", "/": "//", "%": "%"}


def show(t) -> str:
    if isinstance(t, dsl.Var):
        return t.name
    if isinstance(t, dsl.Lit):
        return repr(t.value)
    if isinstance(t, dsl.ListExpr):
        items = [show(i) for i in t.items] + ([f"*{show(t.tail)}"] if t.tail is not None else [])
        return "[" + ", ".join(items) + "]"
    if isinstance(t, dsl.Pieces):
        if t.each is None:
            return f"pieces({show(t.split)})"
        p = dsl.Var("p", dsl.TENSOR)
        return f"[{show(t.each(p))} for p in {show(t.split)}]"
    if isinstance(t, dsl.Each):
        params = [dsl.Var(o.name.rstrip("s") or "a", dsl.TENSOR) for o in t.outs]
        names = ", ".join(p.name for p in params)
        source = t.outs[0].name if len(t.outs) == 1 else f"zip({', '.join(o.name for o in t.outs)})"
        guards = [show_guard(g) for g in (t.when(*params) if t.when else [])]
        cond = f" if {' and '.join(guards)}" if guards else ""
        return f"[{show(t.template(*params))} for {names} in {source}{cond}]"
    return _show_call(t)


def _show_call(t: dsl.Call) -> str:
    a = t.args
    if t.fn in _INFIX:
        return f"({show(a[0])} {_INFIX[t.fn]} {show(a[1])})"
    if t.fn == "vec-of":
        return "[" + ", ".join(show(x) for x in a) + "]"
    if t.fn == "vec-get":
        return f"{show(a[0])}[{show(a[1])}]"
    if t.fn == "Get":
        return f"{show(a[0])}[{show(a[1])}]"
    if t.fn in ("shape", "dtype"):
        return f"{show(a[0])}.{t.fn}"
    if t.fn == "vec-length" and isinstance(a[0], dsl.Call) and a[0].fn == "shape":
        return f"{show(a[0].args[0])}.ndim"
    if t.fn == "vec-length":
        return f"len({show(a[0])})"
    if t.fn == "vec-append":
        return f"{show(a[0])} + {show(a[1])}"
    if t.fn in ("vec-set", "vec-remove"):
        return f"{show(a[0])}.{t.fn[4:]}({', '.join(show(x) for x in a[1:])})"
    if t.fn in ("Unary", "Binary", "Ternary", "Softmax") and isinstance(a[0], dsl.Lit):
        return f"{a[0].value}({', '.join(show(x) for x in a[1:])})"
    name = _TORCH_NAME.get(t.fn, t.fn.replace("-", "_"))
    return f"{name}({', '.join(show(x) for x in a)})"


def show_guard(g) -> str:
    op = "==" if g.op == "=" else g.op
    return f"{show(g.lhs)} {op} {show(g.rhs)}"
