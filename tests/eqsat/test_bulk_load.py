"""Loading a program in bulk (``eqsat.bulk``: ``input`` rows and loading rules) builds the same
e-graph as one egglog command per statement, in a constant number of commands (issue 30)."""
import sys
from pathlib import Path

import pytest

import eqsat_rules.library as library
from eqsat.deadline import Deadline, OutOfTime
from eqsat.egraph import EGraphError, Session
from eqsat.schema import ID_CTORS
from eqsat.terms import IVec, Program as Statements, Ref, Term, TList

sys.path.insert(0, str(Path(__file__).parents[1] / "eqsat"))
from eqsat_graphs import Program  # noqa: E402


def _labels(view) -> dict:
    """Each class labelled by what it holds, not by its id: its nodes' constructors, literals and
    children's labels (the e-graph before saturation is acyclic), plus its analyses."""
    memo: dict[str, int] = {}

    def label(c: str) -> int:
        if c not in memo:
            memo[c] = hash((view.sort[c], view.shape.get(c), view.dtype.get(c), c in view.params, tuple(sorted(
                hash((view.nodes[n].ctor, tuple(label(a[1]) if a[0] == "class" else a for a in view.nodes[n].args)))
                for n in view.classes[c]))))
        return memo[c]

    return {c: label(c) for c in view.classes}


def _egraph(session: Session) -> tuple:
    """The e-graph up to class ids: labelled classes, each name's class, the tables' sizes."""
    view = session.view()
    labels = _labels(view)
    lets = {name: labels[c] for name, c in view.lets.items() if not name.startswith("$list")}
    return sorted(labels.values()), lets, len(view.nodes)


def _load_both(monkeypatch, *programs: Statements) -> tuple[Session, Session]:
    out = []
    monkeypatch.setattr(Session, "bulk_from", 0)
    for bulk in (False, True):
        monkeypatch.setattr(Session, "bulk", bulk)
        s = Session([], library.shape_rules())
        for p in programs:
            s.load(p)
        out.append(s)
    return out[0], out[1]


def _graph() -> Program:
    p = Program()
    x, y = p.input((8, 12)), p.input((8, 12))
    w, b = p.param((6, 12)), p.param((6,))
    pieces = p.split(p.unary("relu", p.cat([x, y], 1)), [1] * 12, 1)  # a vector longer than MAX_VEC
    out = p.cat([p.unary("sigmoid", q) for q in pieces], 1)  # a list longer than LIST_SEGMENT's cut
    p.layer_norm(p.linear(out, w, b), p.param((6,)), p.param((6,)))
    p.sum(out, 1)
    return p


def test_bulk_loading_builds_the_text_loaders_egraph(monkeypatch):
    text, bulk = _load_both(monkeypatch, _graph().program)
    assert _egraph(bulk) == _egraph(text)
    assert bulk.size() == text.size() - sum(1 for n in text.view().lets if n.startswith("$list"))


def test_the_loading_numbers_leave_nothing_behind(monkeypatch):
    _, bulk = _load_both(monkeypatch, _graph().program)
    view = bulk.view()
    assert not any(n.ctor in ID_CTORS for n in view.nodes.values())
    sizes = dict(bulk._run("(print-size)")[0].sizes)
    assert all(sizes.get(t, 0) == 0 for t in sizes if t.startswith("load-") or t in ID_CTORS), sizes


def test_strings_input_cannot_carry_and_names_bound_earlier(monkeypatch):
    """Keys with tabs, blanks around them or unicode go by command; a second program refers to the
    first's names, rebinds one (the first binding stands, as egglog's ``:merge old`` keeps it), binds a
    name to a name and a tuple's item."""
    first = Statements()
    a = first.let("a", Term("Input", (" spaced\tkey\n",)))
    b = first.let("b", Term("Input", ("ünï",)))
    first.set_shape(a, (3, 4))
    first.set_dtype(a, "float32")
    second = Statements()
    c = second.let("c", Term("Binary", ("add", a, b)))
    second.let("a", Term("Input", ("other",)))  # rebinding: ignored
    second.let("d", c)  # a name for a name
    t = second.let("t", Term("Split", (c, IVec((1, 1, 1, 1)), 1)))
    second.let("g", Term("Get", (t, 2)))
    second.let("l", TList((a, c), None))
    second.let("e", TList((), Ref("l")))  # a name for a list
    second.same(Ref("g"), Term("Unary", ("neg", a)))
    second.mark_param(b)
    second.keeps_dtype("my\top")
    text, bulk = _load_both(monkeypatch, first, second)
    assert _egraph(bulk) == _egraph(text)
    view = bulk.view()
    assert view.lets["a"] != view.lets["c"] and view.lets["d"] == view.lets["c"] and view.lets["e"] == view.lets["l"]
    inputs = {n.args[0][1] for n in view.nodes.values() if n.ctor == "Input"}
    assert inputs == {" spaced\tkey\n", "ünï", "other"}
    assert view.shape[view.lets["a"]] == (3, 4) and view.params == {view.lets["b"]}


def test_a_program_loads_in_a_few_commands_whatever_its_size(monkeypatch):
    """The text loader runs ~3 egglog commands a node; in bulk a program is a few ``input``s and one
    schedule (test fails before the bulk loader: 1,500+ commands); a small program goes as text."""
    p = Program()
    x = p.input((4, 4))
    for _ in range(500):
        x = p.unary("relu", x)
    monkeypatch.setattr(Session, "bulk", True)
    monkeypatch.setattr(Session, "bulk_from", 0)
    s = Session([], library.shape_rules())
    s.load(Statements())  # the loading tables, declared once per session
    ran = []
    monkeypatch.setattr(s, "_eg", _Counting(s._eg, ran))
    s.load(p.program)
    assert sum(ran) < 20, sum(ran)
    assert len(s.view().lets) == 501
    monkeypatch.setattr(Session, "bulk_from", 10)
    small = Statements()
    small.let("tiny", Term("Input", ("t",)))
    s.load(small)
    assert ran[-1] == 1 and "tiny" in s.view().lets


class _Counting:
    """An egglog e-graph that counts the commands it runs."""

    def __init__(self, eg, ran: list):
        self._eg, self._ran = eg, ran

    def run_program(self, *commands):
        self._ran.append(len(commands))
        return self._eg.run_program(*commands)

    def __getattr__(self, name):
        return getattr(self._eg, name)


def test_a_statement_of_the_wrong_sort_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(Session, "bulk", True)
    monkeypatch.setattr(Session, "bulk_from", 0)
    p = Statements()
    t = p.let("t", Term("Split", (Ref("x"), IVec((1, 1)), 0)))
    p.let("u", Term("Unary", ("neg", t)))  # a tuple where a tensor goes
    with pytest.raises(EGraphError, match="TTuple, not a Tensor"):
        Session([], library.shape_rules()).load(p)


def test_a_spent_deadline_stops_the_load_before_it_reaches_egglog(monkeypatch):
    monkeypatch.setattr(Session, "bulk", True)
    monkeypatch.setattr(Session, "bulk_from", 0)
    p = Program()
    x = p.input((4, 4))
    for _ in range(100):
        x = p.unary("relu", x)
    s = Session([], library.shape_rules())
    with pytest.raises(OutOfTime):
        s.load(p.program, Deadline(0.0))
    assert not s.view().nodes


@pytest.mark.slow  # three models optimized twice: ~1 min
@pytest.mark.parametrize("name", ["interformer", "dhen", "llama_block"])
def test_bulk_and_text_loading_give_the_same_program(name, monkeypatch):
    """The raised program, its price and the rules used are the same whichever loader built the
    e-graph (the models of ``test_determinism``)."""
    import torch

    from eqsat_torch.pipeline import optimize
    from test_determinism import COST, OPTIONS, _dynamo_graph

    gm, inputs = _dynamo_graph(name)
    options = {**OPTIONS, "cost": COST.get(name)}
    monkeypatch.setattr(Session, "bulk_from", 0)
    got = {}
    for bulk in (False, True):
        monkeypatch.setattr(Session, "bulk", bulk)
        with torch.no_grad():
            got[bulk] = optimize(gm, inputs, options)
    (text, text_report), (fast, fast_report) = got[False], got[True]
    assert text_report.changed, text_report.summary()
    assert fast.code == text.code, (text_report.summary(), fast_report.summary())
    assert (fast_report.cost_after, fast_report.rules_used) == (text_report.cost_after, text_report.rules_used)
