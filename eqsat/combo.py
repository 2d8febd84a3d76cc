"""Inductor's combo kernels (``torch._inductor.config.combo_kernels``): the launches they save on a
program's fused groups, and the dependencies between groups that decide which may combine."""
from __future__ import annotations

from .kernel import Kernel

COMBO_MAX_NODES = 8  # torch._inductor.config.combo_kernel_max_num_nodes


def group_deps(groups: list[list[Kernel]]) -> list[set[int]]:
    """For each group, the groups whose buffers it reads (a cat's readers read its slices' copies)."""
    owner = {k.writes: i for i, g in enumerate(groups) for k in g}
    for i, g in enumerate(groups):
        for k in g:
            if k.copy_of is not None:
                owner.setdefault(k.copy_of, i)
    return [{owner[b] for k in g for b in k.reads if owner.get(b, i) != i} for i, g in enumerate(groups)]


def combo_savings(groups: list[list[Kernel]]) -> int:
    """Launches Inductor's combo kernels save on these fused groups, by its own rules
    (``Scheduler.create_combo_kernel_nodes``): the groups fall into dependency levels (every group of a
    level depends only on earlier levels), each level is cut, in program order, into runs of
    ``COMBO_MAX_NODES``; in a run, the generated groups (never an extern call, nor a split reduction:
    two kernels that depend on each other) launch once per kind, pointwise and reduction
    (``ComboKernel.horizontal_partition`` separates them). Not modelled: the tiling dims and long
    reductions that split a partition further, and torch 2.13's peak-memory gate."""
    deps = group_deps(groups)
    memo: dict[int, int] = {}
    level = [_level(i, deps, memo) for i in range(len(groups))]
    saved = 0
    for lv in set(level):
        members = sorted((i for i in range(len(groups)) if level[i] == lv), key=lambda i: min(k.index for k in groups[i]))
        for start in range(0, len(members), COMBO_MAX_NODES):
            run = [groups[i] for i in members[start:start + COMBO_MAX_NODES]]
            combinable = [g for g in run if g[0].kind != "extern" and not any(k.split for k in g)]
            if len(combinable) >= 2:
                kinds = {"reduction" if any(k.kind == "reduction" for k in g) else "pointwise" for g in combinable}
                saved += len(combinable) - len(kinds)
    return saved


def _level(i: int, deps: list[set[int]], memo: dict[int, int]) -> int:
    """1 + the deepest level among ``i``'s dependencies (0 for none), iteratively."""
    stack = [i]
    while stack:
        j = stack[-1]
        todo = [d for d in deps[j] if d not in memo]
        if todo:
            stack.extend(todo)
            continue
        memo[j] = 1 + max((memo[d] for d in deps[j]), default=-1)
        stack.pop()
    return memo[i]
