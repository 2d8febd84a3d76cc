"""The fusion scheduler's cycle check is linear per merge (issue 30): pricing the 4,096-piece Dynamo
graph's input walked every group among a wide cat's ancestors at each of its 4,096 merges (21 s of a
38 s build). The groups it forms are the ones the walk formed: checked against that walk on random
kernel graphs (pointwise and reduction spaces, cats whose slices many kernels write, copies)."""
from hypothesis import given, settings, strategies as st

from eqsat import fusion_groups as fusion
from eqsat.fusion_groups import Kernel, _Groups, schedule


class _WalkedGroups(_Groups):
    """The check this replaced: every group among the merged group's ancestors (after its first
    member), one by one, asked whether it depends on the merged group."""

    def try_merge(self, i, j, any_space=False):
        a, b = self.find(i), self.find(j)
        if a == b:
            return True
        sa, sb = self.shape[a], self.shape[b]
        if not any_space and not fusion._compatible(sa, sb, self.outer_loop):
            return False
        mask = self.members[a] | self.members[b]
        first = (mask & -mask).bit_length() - 1
        outside = ((self.anc[a] | self.anc[b]) & ~mask) >> first << first
        while outside:
            g = self.find((outside & -outside).bit_length() - 1)
            if self.anc[g] & mask:
                return False
            outside &= ~self.members[g]
        self.parent[b] = a
        self.members[a] = mask
        self.anc[a] = (self.anc[a] | self.anc[b]) & ~mask
        self.shape[a] = sa if sa.kind == "reduction" or sb.kind != "reduction" else sb
        return True


@st.composite
def kernel_graphs(draw):
    n = draw(st.integers(2, 24))
    kernels, aliases = [], {}
    for i in range(n):
        kind = draw(st.sampled_from(["pointwise", "pointwise", "reduction", "extern"]))
        space = (draw(st.sampled_from([4, 8])), 1 if kind != "reduction" else draw(st.sampled_from([2, 4])))
        reads = {f"b{j}": 1.0 for j in draw(st.sets(st.integers(0, i - 1), max_size=3))} if i else {"x": 1.0}
        if i > 2 and draw(st.booleans()):  # a cat of earlier buffers, read through its own name
            cat = f"cat{i}"
            aliases[cat] = [f"b{j}" for j in draw(st.lists(st.integers(0, i - 1), min_size=2, max_size=5))]
            reads[cat] = 1.0
        kernels.append(Kernel(i, kind, f"b{i}", 1.0, space, reads, lead=space[0],
                              views=frozenset(reads), copy_of=draw(st.sampled_from([None, "c0", "c1"]))))
    return kernels, aliases, draw(st.booleans())


def _groups(kernels, aliases, outer_loop):
    return sorted(sorted(k.index for k in g) for g in schedule(kernels, aliases, outer_loop))


@settings(max_examples=300, deadline=None)
@given(kernel_graphs())
def test_the_groups_are_those_the_walk_formed(graph):
    kernels, aliases, outer_loop = graph
    got = _groups(kernels, aliases, outer_loop)
    original, fusion._Groups = fusion._Groups, _WalkedGroups
    try:
        expected = _groups(kernels, aliases, outer_loop)
    finally:
        fusion._Groups = original
    assert got == expected


def test_a_wide_cat_merges_without_walking_its_slice_writers():
    """4,096 pieces ``sigmoid(p) * 2`` into one cat: each merge into the cat's group asks only the
    groups after it (none yet), not the thousands of pieces before it."""
    pieces, kernels = 4096, []
    for i in range(pieces):
        kernels.append(Kernel(2 * i, "pointwise", f"s{i}", 1.0, (64, 1), {"x": 1.0}, lead=64))
        kernels.append(Kernel(2 * i + 1, "pointwise", f"m{i}", 1.0, (64, 1), {f"s{i}": 1.0}, lead=64))
    kernels.append(Kernel(2 * pieces, "pointwise", "out", 1.0, (64, 1), {"cat": 1.0}, lead=64))
    finds = []
    original_find = _Groups.find

    def counted_find(self, i):
        finds.append(i)
        return original_find(self, i)

    _Groups.find = counted_find
    try:
        groups = schedule(kernels, {"cat": [f"m{i}" for i in range(pieces)]}, outer_loop=True)
    finally:
        _Groups.find = original_find
    assert len(groups) == 1
    assert len(finds) < 20 * len(kernels), len(finds)  # the walk: ~pieces² / 2 finds
