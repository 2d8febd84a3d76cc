"""Scheduling: fuse planned kernels into the groups Inductor's scheduler makes (vertical, horizontal,
a cat's copies), each one generated kernel, and count the bytes each group moves."""
from __future__ import annotations

from typing import Callable

from .kernel import Kernel



def _compatible(a: Kernel, b: Kernel, outer_loop: bool) -> bool:
    """Iteration spaces Inductor's scheduler can put in one kernel: the C++ backend fuses any loop
    nests with the same outer loop (outer-loop fusion); Triton needs matching (numel, rnumel)."""
    if outer_loop:
        return a.lead == b.lead
    if a.kind == "pointwise" and b.kind == "pointwise":
        return a.space[0] == b.space[0]
    if a.kind == "reduction" and b.kind == "reduction":  # a row sum and a column sum index apart
        return a.space == b.space and a.inner == b.inner
    pw, red = (a, b) if a.kind == "pointwise" else (b, a)
    return pw.space[0] in (red.space[0] * red.space[1], red.space[0])


class _Groups:
    """Union-find over kernels with Inductor-style cycle checks on group ancestors (bitsets).

    A fused group has one iteration space, as Inductor's fused node has one ``(numel, rnumel)``: two
    groups merge only when their spaces agree (``_compatible`` of each group's ``shape``, a reduction
    member when there is one). Checking only the two kernels being merged let a pointwise op of
    ``n·r`` elements bridge a row reduction ``(n, r)`` and a column reduction ``(r, n)`` of one
    tensor into one group (every layer norm backward: the input gradient's row sums and the weight
    and bias gradients' column sums), which Triton runs as separate kernels."""

    def __init__(self, kernels: list[Kernel], ancestors: list[int], descendants: list[int], outer_loop: bool):
        self.parent = list(range(len(kernels)))
        self.members = [1 << k.index for k in kernels]
        self.anc = list(ancestors)
        self.desc = list(descendants)
        self.multi = 0  # members of every group of more than one kernel
        self.kernels = kernels
        self.shape = list(kernels)  # per group root: the kernel whose space stands for the group
        self.outer_loop = outer_loop

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def _spans(self, before: int, after: int) -> bool:
        """Whether a group of several kernels has members in both ``before`` (ancestors of the merged
        group) and ``after`` (its descendants): the merge would put it on a cycle. Walked from the
        side with fewer such members: a wide cat's slice writers are thousands of groups before it,
        none after it yet (walking every group among the ancestors was quadratic)."""
        before, after = before & self.multi, after & self.multi
        if not before or not after:
            return False
        walk, other = (before, after) if before.bit_count() <= after.bit_count() else (after, before)
        while walk:  # one check per group: its members all give the same answer
            g = self.find((walk & -walk).bit_length() - 1)
            if self.members[g] & other:
                return True
            walk &= ~self.members[g]
        return False

    def try_merge(self, i: int, j: int, any_space: bool = False) -> bool:
        """Merge the groups of kernels i and j unless their spaces differ (``any_space``: a foreach
        kernel of copies, one loop per copy) or the merged group would depend on itself."""
        a, b = self.find(i), self.find(j)
        if a == b:
            return True
        sa, sb = self.shape[a], self.shape[b]
        if not any_space and not _compatible(sa, sb, self.outer_loop):
            return False
        mask = self.members[a] | self.members[b]
        # A path a → x → b leaves through a member, so x comes after the first member in topo order.
        first = (mask & -mask).bit_length() - 1
        before = ((self.anc[a] | self.anc[b]) & ~mask) >> first << first
        after = (self.desc[a] | self.desc[b]) & ~mask
        if before & after or self._spans(before, after):
            return False
        self.parent[b] = a
        self.members[a] = mask
        self.anc[a] = (self.anc[a] | self.anc[b]) & ~mask
        self.desc[a] = (self.desc[a] | self.desc[b]) & ~mask
        self.multi |= mask
        self.shape[a] = sa if sa.kind == "reduction" or sb.kind != "reduction" else sb
        return True


def schedule(kernels: list[Kernel], aliases: dict[str, list[str]], outer_loop: bool) -> list[list[Kernel]]:
    """Fuse fusible kernels into groups; extern kernels stay alone.

    ``aliases`` maps a cat buffer to the buffers written into its slices: reading it depends on them.
    """
    producer = {k.writes: k for k in kernels}
    ancestors: list[int] = []
    read_bits: dict[str, int] = {}  # buffer → its writers and their ancestors (a cat: every slice writer)
    writes_into: dict[int, list[str]] = {}  # kernel → the buffers read whose writers include it
    for k in kernels:
        bits = 0
        for buf in k.reads:
            if buf not in read_bits:  # producers come first: a buffer's bits are final when first read
                b = 0
                for w in aliases.get(buf, (buf,)):
                    p = producer.get(w)
                    if p is not None:
                        b |= ancestors[p.index] | (1 << p.index)
                        writes_into.setdefault(p.index, []).append(buf)
                read_bits[buf] = b
            bits |= read_bits[buf]
        ancestors.append(bits)
    descendants = [0] * len(kernels)
    read_by: dict[str, int] = {}  # buffer → its readers and their descendants (final before its writers)
    for k in reversed(kernels):
        for buf in writes_into.get(k.index, ()):
            descendants[k.index] |= read_by[buf]
        for buf in k.reads:
            read_by[buf] = read_by.get(buf, 0) | descendants[k.index] | (1 << k.index)
    groups = _Groups(kernels, ancestors, descendants, outer_loop)
    fusible = [k for k in kernels if k.kind != "extern" and k.fuses]
    writers: dict[str, list[int]] = {}  # buffer → its fusible writers (a cat: every slice writer)
    joined: set[str] = set()  # buffers whose writers are all in one group (union-find: for good)
    scatters = [k for k in kernels if not k.fuses and k.index_reads]
    for k in fusible + scatters:  # vertical: producer → consumer, also through a cat's slice writers
        for buf in (k.reads if k.fuses else k.index_reads):
            if buf not in writers:
                writers[buf] = [p.index for w in aliases.get(buf, (buf,))
                                if (p := producer.get(w)) is not None and p.kind != "extern" and p.fuses]
            ws = writers[buf]
            if buf not in joined and len({groups.find(i) for i in ws}) <= 1:
                joined.add(buf)
            # one group: the first merge decides for all (the rest would repeat it with the same groups)
            if buf in aliases and not outer_loop:
                continue  # Triton: a slice writer writes other indices than the cat's reader reads
            for i in ws[:1] if buf in joined else ws:
                groups.try_merge(i, k.index)
    copies: dict[str, list[Kernel]] = {}
    for k in fusible:  # one cat's slice copies: the C++ backend emits them in one function; Triton
        if k.copy_of is not None and (outer_loop or k.copies_input):  # a foreach kernel for inputs
            copies.setdefault(k.copy_of, []).append(k)
    for ks in copies.values():
        for a, b in zip(ks, ks[1:]):
            groups.try_merge(a.index, b.index, any_space=True)
    readers: dict[str, list[Kernel]] = {}
    for k in fusible:  # horizontal: kernels sharing a read (Triton: the same indices, not just buffer)
        for buf in (k.reads if outer_loop else k.views):
            readers.setdefault(buf, []).append(k)
    for ks in readers.values():
        for a, b in zip(ks, ks[1:]):
            groups.try_merge(a.index, b.index)
    out: dict[int, list[Kernel]] = {}
    for k in kernels:
        out.setdefault(groups.find(k.index), []).append(k)
    return list(out.values())


def group_bytes(group: list[Kernel], consumers: dict[str, set[int]], outputs: set[str],
                part: Callable[[str], tuple[str, float, float]] | None = None) -> float:
    """Bytes a fused kernel moves: distinct outside reads, plus writes read outside it or kept.

    ``part(v)`` is (buffer, bytes of view v, bytes of the buffer): distinct views of one buffer (the
    pieces of a split) read distinct bytes, so they add up, to at most the whole buffer.
    """
    inside = {k.writes for k in group}
    ids = {k.index for k in group}
    reads: dict[str, float] = {}
    for k in group:
        for buf, nb in k.reads.items():
            if buf not in inside:
                reads[buf] = max(reads.get(buf, 0.0), nb)
    if part is not None:
        pieces: dict[str, dict[str, float]] = {}
        whole: dict[str, float] = {}
        for v in {v for k in group for v in k.views}:
            buf, nb, total = part(v)
            if buf in reads:
                pieces.setdefault(buf, {})[v] = min(nb, total)
                whole[buf] = total
        for buf, got in pieces.items():
            reads[buf] = max(reads[buf], min(sum(got.values()), whole[buf]))
    writes = sum(k.out_bytes for k in group if k.writes in outputs or consumers.get(k.writes, set()) - ids)
    return sum(reads.values()) + writes

