"""The e-graph read from egglog's tables (``Session.view``) is the one its JSON serializer exports."""
import sys
from collections import Counter
from pathlib import Path

import eqsat_rules.library as library

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


def test_reading_the_view_back_runs_no_garbage_collection_and_restores_the_collector():
    """The view's ~100k small objects started collections that walked the whole heap (0.40 of 0.55 CPU s
    on the random 15k-node graph): none runs while reading, and the caller's setting is kept."""
    import gc
    p = Program()
    xs = [p.input((4, 8)) for _ in range(40)]
    p.cat([p.unary("sigmoid", x) for x in xs], 1)
    session = build(p, library.select(None, (), ()), iterations=2)
    started = []

    def count(phase, info):
        started.append(phase == "start")

    threshold = gc.get_threshold()
    gc.set_threshold(1)  # a collection at every allocation of a container, unless paused
    try:
        gc.callbacks.append(count)
        view = session.view()
        gc.callbacks.remove(count)
        assert gc.isenabled()
        gc.disable()
        session.view()
        assert not gc.isenabled()  # a caller's pause is not undone
    finally:
        gc.enable()
        gc.set_threshold(*threshold)
        if count in gc.callbacks:
            gc.callbacks.remove(count)
    assert view.num_nodes > 80  # ~hundreds of tracked objects: hundreds of collections at threshold 1
    assert sum(started) <= 8  # entering and leaving the pause allocate a few objects; 702 unpaused
