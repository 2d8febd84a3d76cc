"""The e-graph's term part read straight from egglog's tables (``EGraph.freeze``), as an
:class:`~eqsat.serialized.EGraphView`.

egglog's JSON serializer is quadratic in our e-graphs (a 2,048-way split→sigmoid→cat: 5.5 s for
about 50k rows; 4,096 pieces: 16 s), and it exports every analysis table only for Python to drop
them. ``freeze`` hands over the rows as values (0.04 s for the same e-graph); this reads the term
constructors, the name bindings (``schema.NAME_CTORS`` rows and any global ``let``), ``shape``, ``dtype`` and
``IsParam``, and nothing else. Class ids are ``c<k>`` and e-node ids ``<ctor>-<row>``: opaque strings,
like the serializer's.
"""
from __future__ import annotations

from typing import Any, Callable

from .gcpause import gc_paused
from .ops import constructors
from .schema import NAME_CTORS, TERM_SORTS
from .serialized import EGraphView, ENode


def frozen_view(eg: Any) -> EGraphView:
    """An :class:`EGraphView` of ``eg`` (an ``egglog.bindings.EGraph``), rebuilt and canonical."""
    with gc_paused():  # ~100k acyclic objects: collections were most of the time (eqsat.gcpause)
        return _read(eg)


def _read(eg: Any) -> EGraphView:
    functions = eg.freeze().functions
    view = EGraphView()
    class_ids: dict[Any, str] = {}
    known = class_ids.get  # ``known(v) or cls(v, sort)``: no Python call for a class seen before

    def cls(value, sort: str) -> str:
        cid = class_ids[value] = f"c{len(class_ids)}"
        view.sort[cid] = sort
        view.classes[cid] = []
        return cid

    decode = _decoders(eg)
    terms = constructors()
    nodes, classes, lets = view.nodes, view.classes, view.lets
    for name, fn in functions.items():
        sort = fn.output_sort
        if fn.is_let_binding:
            if sort in TERM_SORTS and fn.rows:
                v = fn.rows[0].output
                lets[name] = known(v) or cls(v, sort)
            continue
        if sort not in TERM_SORTS or (name not in terms and name not in NAME_CTORS):
            continue  # rules/listpat.py's pick tables and eqsat.bulk's loading numbers are no e-nodes
        if name in NAME_CTORS:
            to_str = eg.value_to_string
            for row in fn.rows:
                if not row.subsumed:
                    v = row.output
                    out = known(v) or cls(v, sort)
                    lets[to_str(row.inputs[0])] = out
            continue
        # once per table, not per row: each argument's sort and its decoder (None: a term class)
        plan = [(s, None if s in TERM_SORTS else decode[s]) for s in fn.input_sorts]
        for k, row in enumerate(fn.rows):
            if row.subsumed:
                continue
            v = row.output
            out = known(v) or cls(v, sort)
            args = [("class", known(v) or cls(v, s)) if d is None else ("lit", d(v))
                    for v, (s, d) in zip(row.inputs, plan)]
            nid = f"{name}-{k}"
            nodes[nid] = ENode(nid, name, out, args)
            classes[out].append(nid)
    for name, target in (("shape", view.shape), ("dtype", view.dtype)):
        fn = functions.get(name)
        if fn is None:
            continue
        dec = decode[fn.output_sort]
        for row in fn.rows:
            c = known(row.inputs[0])
            if c is not None:
                target[c] = dec(row.output)
    fn = functions.get("IsParam")
    for row in fn.rows if fn is not None else ():
        c = known(row.inputs[0])
        if c is not None:
            view.params.add(c)
    return view


def _decoders(eg: Any) -> dict[str, Callable[[Any], Any]]:
    """Primitive sort → Python value, as :func:`eqsat.serialized.parse` decodes literals."""
    vecs: dict = {}  # shapes repeat: decode each distinct vector once

    def ivec(v) -> tuple[int, ...]:
        out = vecs.get(v)
        if out is None:
            out = vecs[v] = tuple(eg.value_to_i64(x) for x in eg.value_to_vec(v))
        return out

    return {
        "i64": eg.value_to_i64,
        "String": eg.value_to_string,
        "f64": eg.value_to_f64,
        "bool": eg.value_to_bool,
        "IVec": ivec,
    }
