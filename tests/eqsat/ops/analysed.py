"""What the analysis gives the terms a rewrite creates: an e-graph with one float64 input ``x`` of
shape (8, 16), terms let without shape or dtype facts, analysed to a fixpoint."""
from eqsat.egraph import Budget, Session
from eqsat.serialized import EGraphView, parse
from eqsat.terms import Program, Term
from eqsat_rules.library import shape_rules


def analysed(**terms) -> tuple[EGraphView, dict[str, str]]:
    """``analysed(y=lambda x: Term("Unary", ("sinh", x)))``: the view and each term's e-class."""
    p = Program()
    x = p.let("$x", Term("Input", ("x",)))
    p.set_shape(x, (8, 16))
    p.set_dtype(x, "float64")
    s = Session([], shape_rules())
    s.load(p)
    for name, make in terms.items():
        s.let(f"${name}", make(x))
    s.saturate(Budget(iterations=0))
    view = parse(s.serialize())
    return view, {name: view.lets[f"${name}"] for name in terms}
