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

    def cls(value, sort: str) -> str:
        cid = class_ids.get(value)
        if cid is None:
            cid = class_ids[value] = f"c{len(class_ids)}"
            view.sort[cid] = sort
            view.classes[cid] = []
        return cid

    decode = _decoders(eg)
    terms = constructors()
    for name, fn in functions.items():
        sort = fn.output_sort
        if fn.is_let_binding:
            if sort in TERM_SORTS and fn.rows:
                view.lets[name] = cls(fn.rows[0].output, sort)
            continue
        if sort not in TERM_SORTS or (name not in terms and name not in NAME_CTORS):
            continue  # rules/listpat.py's pick tables and eqsat.bulk's loading numbers are no e-nodes
        name_ctor = name in NAME_CTORS
        sorts = fn.input_sorts
        decoders = [None if s in TERM_SORTS else decode[s] for s in sorts]  # once per table, not per row
        for k, row in enumerate(fn.rows):
            if row.subsumed:
                continue
            out = cls(row.output, sort)
            if name_ctor:
                view.lets[eg.value_to_string(row.inputs[0])] = out
                continue
            args = [("class", cls(v, s)) if d is None else ("lit", d(v)) for v, s, d in zip(row.inputs, sorts, decoders)]
            nid = f"{name}-{k}"
            view.nodes[nid] = ENode(nid, name, out, args)
            view.classes[out].append(nid)
    for name, target in (("shape", view.shape), ("dtype", view.dtype)):
        fn = functions.get(name)
        for row in fn.rows if fn is not None else ():
            c = class_ids.get(row.inputs[0])
            if c is not None:
                target[c] = decode[fn.output_sort](row.output)
    fn = functions.get("IsParam")
    for row in fn.rows if fn is not None else ():
        c = class_ids.get(row.inputs[0])
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
