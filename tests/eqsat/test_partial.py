"""Programs between the input and the extracted one (eqsat.partial), on a hand-made e-graph:

    input:  r = add(a, b), a = relu(x), b = relu(y), and s = neg(x) a second output
    chosen: a and b read one new class f = fused(x, y) (one site: a, b, f); s = exp(x) (a second site)
"""
from eqsat.partial import partials, put_back, rewrite_sites
from eqsat.serialized import EGraphView, ENode

NODES = [("nx", "Var", "x", ()), ("ny", "Var", "y", ()), ("na", "Relu", "a", ("x",)), ("nb", "Relu", "b", ("y",)),
         ("nr", "Add", "r", ("a", "b")), ("ns", "Neg", "s", ("x",)),
         ("nf", "Fused", "f", ("x", "y")), ("na1", "Get0", "a", ("f",)), ("nb1", "Get1", "b", ("f",)),
         ("ns1", "Exp", "s", ("x",))]


def _view() -> EGraphView:
    view = EGraphView()
    for nid, ctor, cls, kids in NODES:
        view.nodes[nid] = ENode(nid, ctor, cls, [("class", k) for k in kids])
        view.classes.setdefault(cls, []).append(nid)
        view.sort[cls] = "Tensor"
    return view


VIEW, ROOTS = _view(), ["r", "s"]
INPUT = {"x": "nx", "y": "ny", "a": "na", "b": "nb", "r": "nr", "s": "ns"}
ORIGINAL = {c: {n} for c, n in INPUT.items()}
CHOSEN = {"x": "nx", "y": "ny", "a": "na1", "b": "nb1", "f": "nf", "r": "nr", "s": "ns1"}


def test_sites_are_the_connected_rewritten_classes():
    assert sorted(map(sorted, rewrite_sites(VIEW, ROOTS, CHOSEN, ORIGINAL))) == [["a", "b", "f"], ["s"]]


def test_putting_back_a_new_class_puts_back_its_readers():
    assert put_back(VIEW, ROOTS, CHOSEN, INPUT, ["f"]) == {**INPUT, "s": "ns1"}


def test_putting_back_one_reader_keeps_the_new_class_for_the_other():
    mixed = put_back(VIEW, ROOTS, CHOSEN, INPUT, ["a"])
    assert mixed == {**CHOSEN, "a": "na"}


def test_each_site_put_back_is_a_candidate_and_no_candidate_is_the_input_or_ours():
    found = partials(VIEW, ROOTS, CHOSEN, INPUT, ORIGINAL, [], {})
    assert [p.choice for p in found] == [{**INPUT, "s": "ns1"}, {**CHOSEN, "s": "ns"}]
    assert [p.name.split(":")[0] for p in found] == ["put back 0", "put back 1"]
    assert partials(VIEW, ROOTS, CHOSEN, INPUT, ORIGINAL, [], {}, most=1) == []  # more sites than candidates
    one_site = {**CHOSEN, "s": "ns"}
    assert partials(VIEW, ROOTS, one_site, INPUT, ORIGINAL, [], {}) == []  # putting it back is the input
