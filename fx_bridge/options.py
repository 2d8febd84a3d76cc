"""What a user can set, checked when it is set: a wrong option or rule fails loudly at
``eqsat_backend(...)`` (or, through ``torch.compile(options=...)``, at the first compile) with the
offending name and the valid choices, instead of silently changing what the optimizer does.
"""
from __future__ import annotations

import difflib
import numbers
from dataclasses import dataclass, fields
from typing import Any, Sequence

import torch

from eqsat.cost import CostModel
from eqsat.budget import Budget

SEARCHES = ("saturate", "greedy")
INNER = ("inductor", "eager")


class OptionError(ValueError):
    """An option the user set is unknown, of the wrong type, or out of range."""


@dataclass
class Options:
    """Everything a user can set, as ``eqsat_backend(**options)`` or ``torch.compile(options=...)``."""

    families: Sequence[str] | None = None     # None: every family
    disabled: Sequence[str] = ()              # rule or family names switched off
    extra_rules: Sequence[Any] = ()           # user rules (DSL or Rule), run with the built-in ones
    check: bool = True                        # check user rules numerically before accepting them
    iterations: int = 8
    max_nodes: int = 200_000
    seconds: float = 10.0
    max_graph_nodes: int = 50_000             # most nodes built as one e-graph; past REGION_NODES a graph
                                              # is optimized unit by unit (eqsat_torch.scale.clusters), each under it
    validate: bool = False                    # run original and optimized side by side (every pass)
    search: str = "saturate"                  # "saturate" | "greedy" (one family at a time)
    always_raise: bool = False                # rebuild the graph even when nothing is cheaper
    horizontal: bool = True                   # insert batch-fusion candidates (eqsat_rules.batch)
    inner: str = "inductor"                   # compiler the optimized graph goes to: "inductor" | "eager"
    cost: CostModel | None = None             # None: the calibrated model for the inputs' device
    ilp_seconds: float = 5.0                  # time limit of the DAG-aware ILP extractor
    post_grad: bool = True                    # also optimize the Aten graphs (eqsat_torch.inductor.post_grad)
    post_grad_disabled: Sequence[str] = ()    # rules or families off in the Aten (post-grad) graphs only
    verify: bool | None = None                # Inductor counts the input's and our program's launches
    #                                           and the fewer win: None = on for a GPU compile
    cache: bool = True                        # reuse optimized graphs across processes (eqsat_torch.cache)

    def __post_init__(self):
        for name in ("check", "validate", "always_raise", "horizontal", "post_grad", "cache"):
            _need(name, getattr(self, name), bool, "True or False")
        for name in ("iterations", "max_nodes", "max_graph_nodes"):
            _need(name, getattr(self, name), numbers.Integral, "a positive int")
            if getattr(self, name) < 1:
                raise OptionError(f"eqsat option {name}={getattr(self, name)!r}: must be a positive int")
        for name in ("seconds", "ilp_seconds"):
            _need(name, getattr(self, name), numbers.Real, "a positive number of seconds")
            if not getattr(self, name) > 0:
                raise OptionError(f"eqsat option {name}={getattr(self, name)!r}: must be > 0 seconds")
        if self.verify is not None:
            _need("verify", self.verify, bool, "True, False or None")
        _choice("search", self.search, SEARCHES)
        _choice("inner", self.inner, INNER)
        if self.cost is not None and not isinstance(self.cost, CostModel):
            raise TypeError(f"eqsat option cost={self.cost!r}: must be an eqsat.cost.CostModel or None")
        self.extra_rules = _names_list("extra_rules", self.extra_rules, element=None)
        if self.families is not None:
            self.families = _names_list("families", self.families)
        for name in ("disabled", "post_grad_disabled"):
            setattr(self, name, _names_list(name, getattr(self, name)))
        if self.extra_rules or self.families is not None or self.disabled or self.post_grad_disabled:
            self._check_rules()  # only then: the rule library imports egglog (~1 s), which a cache hit skips

    def _check_rules(self) -> None:
        from eqsat_rules.library import known_names, validate_user_rules

        # DSL rules come back compiled, so rebuilding Options (``dataclasses.replace``) is cheap.
        self.extra_rules = validate_user_rules(self.extra_rules, self.check)
        rule_names, families = known_names(self.extra_rules)
        for f in self.families or ():
            _known("families", f, families)
        for name in ("disabled", "post_grad_disabled"):
            for n in getattr(self, name):
                _known(name, n, rule_names | families)

    @classmethod
    def of(cls, options: dict | None) -> "Options":
        options = dict(options or {})
        if "mode" in options:
            raise OptionError(f"eqsat option mode={options['mode']!r} is now called search: "
                              f"search={options['mode']!r} ({' or '.join(map(repr, SEARCHES))}); "
                              f"torch.compile(mode=...) is Inductor's mode and reaches Inductor")
        valid = [f.name for f in fields(cls)]
        for k in options:
            if k not in valid:
                raise OptionError(f"unknown eqsat option {k!r}{_did_you_mean(k, valid)}; valid options: "
                                  f"{', '.join(valid)}, or any Inductor config name (through torch.compile)")
        return cls(**options)

    @classmethod
    def split(cls, options: dict | None, inductor_names: frozenset[str]) -> tuple[dict, dict]:
        """``torch.compile(options=...)`` into ours and Inductor's config (``max_autotune``,
        ``triton.cudagraphs``; ``-`` spelled ``_`` as Inductor takes them). A name that is neither
        stays ours, so ``Options.of`` refuses it."""
        ours, inductor = {}, {}
        valid = {f.name for f in fields(cls)}
        for k, v in (options or {}).items():
            if k not in valid and k.replace("-", "_") in inductor_names:
                inductor[k.replace("-", "_")] = v
            else:
                ours[k] = v
        return ours, inductor

    @staticmethod
    def check_compile_mode(mode: Any) -> None:
        """``torch.compile(mode=...)`` belongs to Inductor; one of our search names there is a
        mistake worth naming (Inductor would only say "Unrecognized mode")."""
        if mode in SEARCHES:
            raise OptionError(f"torch.compile(mode={mode!r}) is Inductor's mode; eqsat's search is an "
                              f"option: torch.compile(..., options={{'search': {mode!r}}})")

    @property
    def budget(self) -> Budget:
        return Budget(self.iterations, self.max_nodes, self.seconds)


def _need(name: str, value: Any, kind: type, what: str) -> None:
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        raise TypeError(f"eqsat option {name}={value!r}: must be {what}")


def _choice(name: str, value: Any, choices: Sequence[str]) -> None:
    if value not in choices:
        raise OptionError(f"eqsat option {name}={value!r}: must be one of {', '.join(map(repr, choices))}")


def _names_list(name: str, value: Any, element: type | None = str) -> tuple:
    """A list/tuple/set of names; a bare string would be read as its characters, so it is refused."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, set, frozenset)):
        raise TypeError(f"eqsat option {name}={value!r}: must be a list, e.g. {name}=[{value!r}]"
                        if isinstance(value, str) else f"eqsat option {name}={value!r}: must be a list")
    if element is not None:
        for v in value:
            if not isinstance(v, element):
                raise TypeError(f"eqsat option {name}: {v!r} is not a name")
    return tuple(value)


def _known(option: str, name: str, valid: set[str]) -> None:
    if name not in valid:
        raise OptionError(f"eqsat option {option}: unknown rule or family {name!r}{_did_you_mean(name, valid)}"
                          f"; valid: {', '.join(sorted(valid))}")


def _did_you_mean(name: str, valid) -> str:
    close = difflib.get_close_matches(name, list(valid), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def device_of(example_inputs: Sequence[Any]) -> str:
    """"cuda" when any input lives on a GPU, else "cpu": the device the graph is priced for."""
    devices = {x.device.type for x in example_inputs if isinstance(x, torch.Tensor)}
    return "cuda" if "cuda" in devices else "cpu"
