"""The e-graph read from egglog's tables (``Session.view``) is the one its JSON serializer exports."""
import sys
from collections import Counter
from pathlib import Path

import rules.library as library

sys.path.insert(0, str(Path(__file__).parents[1] / "eqsat"))
from eqsat_graphs import Program, build  # noqa: E402


def _signature(view):
    """Per bound name: its class's constructors, shape, dtype, parameter flag; plus global counts."""
    per_let = {let: (sorted(view.nodes[n].ctor for n in view.classes[c]), view.shape.get(c),
                     view.dtype.get(c), c in view.params)
               for let, c in view.lets.items()}
    ctors = Counter(n.ctor for n in view.nodes.values())
    lits = Counter(tuple(a for a in n.args if a[0] == "lit") for n in view.nodes.values())
    return per_let, ctors, lits, len(view.classes), len(view.nodes)


def test_frozen_view_matches_the_serialized_egraph_after_saturation():
    from eqsat.serialized import parse
    p = Program()
    x, y = p.input((8, 12)), p.input((8, 12))
    w, b = p.param((6, 12)), p.param((6,))
    pieces = p.split(p.unary("relu", p.cat([x, y], 1)), [4, 8, 12], 1)
    out = p.cat([p.unary("sigmoid", q) for q in pieces], 1)
    p.linear(out, w, b)
    session = build(p, library.select(None, (), ()), iterations=6)
    frozen, serialized = session.view(), parse(session.serialize())
    assert frozen.num_nodes > len(p.originals)  # rules fired: the comparison covers rewritten classes
    assert _signature(frozen) == _signature(serialized)
