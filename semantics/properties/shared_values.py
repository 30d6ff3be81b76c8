"""What a read of shared memory after a barrier sees: the value its last writer stored.

During symbolic execution such a read yields a placeholder (other threads' stores may lie on paths not
explored yet). Here, with every store known, each placeholder becomes

    If(S₁ writes it, S₁'s value at its writer, If(S₂ writes it, …, opaque))

over the shared stores of earlier phases, latest phase first. The innermost test is dropped (the last
candidate's value is taken unconditionally): that the read sees *some* earlier store is the shared-read
initialisation part of memory safety, proved separately; `KernelContext.assumes_initialized` records the
dependency so that an equivalence refutation is not trusted without it. The writer of a store site is a hint (an
inverse of the site's offset); an obligation proves it is the *only* thread of the block that site could
have written the element with, so the If-chain is exact: the latest phase that wrote the element decides,
and within a phase at most one thread wrote it. (Two writers in one phase would be a race, reported by
the race check.) The chain stops at the first store proved to write the element whenever the read happens
(the stores of earlier phases are then hidden), which keeps a reduction tree through one array a tree. A read
whose writers cannot be established stays opaque, and properties depending on it are unknown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import z3

from lean_pool.checker import PROVED, Checker, Obligation
from semantics.canonical import Normalizer
from semantics.properties import warp_stores
from semantics.properties.common import sites
from semantics.properties.races import OTHER, second_thread
from semantics.ptx.machine import Launch, Thread
from semantics.ptx.state import Access, KernelContext, SharedRead
from semantics.terms import subterms, under_binder


def _substitute(term: z3.ExprRef, pairs: list, normal: Normalizer) -> z3.ExprRef:
    """Each read placeholder f(reader coordinates) replaced by its value; an application of f to other
    coordinates (a value shuffled in from another lane) by the value with those coordinates substituted.
    The result is in `normal`'s form: each lane's copy of a reduction read across lanes is then one term.
    An application under a binder (a read in a loop body, `memory._interval_read`, inside a comprehension
    over its iteration) speaks of the bound variable, which `z3.substitute` does not match: such
    applications are replaced as macros, f ↦ its value over de Bruijn variables (`z3.substitute_funs`)."""
    if not pairs:
        return term
    values = {symbol.decl().name(): (symbol, value) for symbol, value in pairs}
    found = [t for t in subterms(term) if z3.is_app(t) and t.num_args() and t.decl().name() in values]
    if not found:
        return term
    replaced, bound = [], {}
    for app in found:
        symbol, value = values[app.decl().name()]
        if under_binder(app):
            bound[app.decl().name()] = (symbol, value)
            continue
        # the coordinates in normal form first: lanes that name one thread alike then share one value
        at = [normal(c) for c in app.children()]
        replaced.append((app, normal(z3.substitute(value, *zip(symbol.children(), at, strict=True)))))
    term = z3.substitute(term, *replaced) if replaced else term
    if bound:
        macros = []
        for symbol, value in bound.values():
            variables = [z3.Var(i, c.sort()) for i, c in enumerate(symbol.children())]
            macros.append((symbol.decl(), z3.substitute(normal(value), *zip(symbol.children(), variables,
                                                                            strict=True))))
        term = z3.substitute_funs(term, *macros)
    return normal.uniform(term)


def unforwarded_intervals(accesses: list[Access]) -> set[tuple[str, int]]:
    """(buffer, phase) of each barrier interval holding a shared access that symbolic execution does not forward
    to a later read of the interval (`memory._read_element` forwards only this path's stores made outside and
    before any loop): a store in or after a loop, or an atomic. If the reader made it, the read sees its value,
    not an earlier interval's; if another thread did, that is a race. Either way the chain of earlier writers
    would miss it, so a read of such an interval stays opaque."""
    return {(a.buffer, a.phase) for a in accesses
            if a.space == "shared" and (a.kind == "atomic" or (a.kind == "store" and bool(a.loops)))}


def _resolved(access: Access, pairs: list, normal: Normalizer) -> Access:
    return dataclasses.replace(access, guard=_substitute(access.guard, pairs, normal),
                               offset=_substitute(access.offset, pairs, normal),
                               values=tuple(_substitute(v, pairs, normal) for v in access.values))


class Resolver:
    def __init__(self, ctx: KernelContext, launch: Launch, shared: set[str], propose: Callable, checker: Checker,
                 timeout_s: float, record, accepted: dict):
        self.ctx, self.thread, self.launch, self.shared = ctx, ctx.thread, launch, shared
        self.propose, self.checker, self.timeout_s, self.record, self.accepted = (propose, checker, timeout_s,
                                                                                  record, accepted)
        self._resolved_stores: dict[int, Access] = {}
        stores = [a for a in ctx.accesses if a.space == "shared" and a.kind == "store"]
        self._sites = sites(stores) | sites(ctx.shared_reads)   # hint keys unique per read and store site
        # Lane symmetry comes from butterfly exchanges between lanes: without any warp exchange there is none
        # to find, and looking for it (flipping each bit of tid.x in every reduction) costs minutes.
        bits = (launch.block[0] - 1).bit_length() if ctx.warp_uniform else 0
        self.normal = Normalizer(self.thread.tid[0], bits)

    def run(self) -> None:
        pairs: list[tuple[z3.ExprRef, z3.ExprRef]] = []
        stores = [a for a in self.ctx.accesses if a.space == "shared" and a.kind == "store"]
        atomics = {(a.buffer, a.phase) for a in self.ctx.accesses if a.space == "shared" and a.kind == "atomic"}
        unforwarded = unforwarded_intervals(self.ctx.accesses)
        for read in sorted(self.ctx.shared_reads, key=lambda r: r.phase):
            if any(buffer == read.buffer and phase < read.phase for buffer, phase in atomics):
                # what atomics leave behind is a sum over threads, not one writer's value: not resolved here
                pairs.append((read.symbol, self._opaque(read, "atomics updated the array before it")))
                continue
            if (read.buffer, read.phase) in unforwarded:
                pairs.append((read.symbol, self._opaque(read, "a store or atomic of its own barrier interval that is "
                                                              "not forwarded to it (in or after a loop) may have "
                                                              "written it")))
                continue
            value = self._value(read, stores, pairs)
            pairs.append((read.symbol, value))
        if pairs:
            for access in self.ctx.accesses:
                resolved = _resolved(access, pairs, self.normal)
                access.guard, access.offset, access.values = resolved.guard, resolved.offset, resolved.values

    def _value(self, read: SharedRead, stores: list[Access], pairs: list) -> z3.ExprRef:
        reader_guard, reader_offset = (_substitute(t, pairs, self.normal) for t in (read.guard, read.offset))
        candidates = sorted((s for s in stores if s.buffer == read.buffer and s.phase < read.phase),
                            key=lambda s: -s.phase)
        # Within one phase the chain's order says nothing about program order, so two store instructions of
        # one phase (one thread could run both) make the last writer ambiguous: leave such a read opaque.
        # Records of one instruction on different paths are exclusive for a thread, and fine.
        lines_per_phase: dict[int, set[int]] = {}
        for s in candidates:
            lines_per_phase.setdefault(s.phase, set()).add(s.line)
        if any(len(lines) > 1 for lines in lines_per_phase.values()):
            return self._opaque(read, "two store instructions of one barrier interval may write it")
        chain = []
        for store in candidates:
            writes = self._writer(read, store, self._resolved_store(store, pairs), reader_guard, reader_offset)
            if writes is None:
                return self._opaque(read, "its writer could not be determined")
            chain.append(writes)
            if self._always(read, store, reader_guard, writes[0]):
                break   # the latest writer writes the element whenever the read happens: earlier ones are hidden
        if not chain:
            return self._opaque(read, "no earlier store wrote it")
        self.ctx.assumes_initialized = True
        value = chain[-1][1]
        for condition, stored in reversed(chain[:-1]):
            value = z3.If(condition, stored, value)
        return value

    def _resolved_store(self, store: Access, pairs: list) -> Access:
        """The store with its own shared reads resolved. Reads are resolved in phase order and a store's reads
        are of its phase or earlier, so by the time a later read asks, `pairs` holds all of them: once is enough."""
        key = id(store)
        if key not in self._resolved_stores:
            self._resolved_stores[key] = _resolved(store, pairs, self.normal)
        return self._resolved_stores[key]

    def _writer(self, read: SharedRead, site: Access, store: Access, reader_guard, reader_offset):
        """(the store's writer wrote the element, the value it wrote), both in the reader's terms; `site` is the
        store as recorded (its hint key's name), `store` with its own shared reads resolved."""
        if store.loops or len(store.values) != 1 or store.elem_bytes != read.elem_bytes:
            return None
        if store.values[0].sort() != read.symbol.sort():   # a float stored, integer bits read (or back)
            return None
        tids = list(self.thread.tid)
        shift = read.elem_bytes.bit_length() - 1
        key = f"shared_value:{self._sites[id(read)]}:from{self._sites[id(site)]}"
        hint = self.propose(key, z3.LShR(store.offset, shift), tids, z3.LShR(reader_offset, shift))
        if hint is None:
            return None
        writer = [(t, hint[str(t)]) for t in tids]
        if not self._unique(store, reader_guard, reader_offset, writer) and not (
                warp_stores.uniform(store, self.thread, OTHER, self.launch, self.shared, self.checker,
                                    self.timeout_s, self.record)
                and self._unique(store, reader_guard, reader_offset, writer, warp_wide=True)):
            return None
        self.accepted[key] = hint
        in_block = z3.And(*[z3.ULT(w, n) for (_, w), n in zip(writer, self.launch.block, strict=True)])
        wrote = z3.And(in_block, z3.substitute(store.guard, *writer),
                       z3.substitute(store.offset, *writer) == reader_offset)
        return wrote, self.normal(z3.substitute(store.values[0], *writer))

    def _always(self, read: SharedRead, store: Access, reader_guard: z3.BoolRef, wrote: z3.BoolRef) -> bool:
        """Whether the store's writer writes the element whenever the read happens. Then no earlier store is
        seen, and the chain stops here: a tree of reductions through one array stays a tree instead of
        growing an If over every earlier phase at every level."""
        ob = Obligation(f"equivalence: the shared store at line {store.line} always writes what the read at line "
                        f"{read.line} reads", "equivalence",
                        z3.And(self.thread.in_launch(self.launch), reader_guard, z3.Not(wrote)))
        outcome = self.checker.check(ob, self.timeout_s)
        self.record(ob, outcome)
        return outcome.status == PROVED

    def _unique(self, store: Access, reader_guard, reader_offset, writer, warp_wide: bool = False) -> bool:
        """No thread of the block but the hinted one writes the element at this store site; with `warp_wide`
        (the site is a warp-wide store of one value, `warp_stores.uniform`) none outside the hinted one's warp."""
        guard, offset, _ = second_thread(store, self.thread, OTHER, self.shared)
        other_than_hint = z3.Or(*[o != w for o, (_, w) in zip(OTHER.tid, writer, strict=True)])
        if warp_wide:
            other_than_hint = z3.Or([
                *[o != w for o, (_, w) in list(zip(OTHER.tid, writer, strict=True))[1:]],
                z3.UDiv(OTHER.tid[0], 32) != z3.UDiv(writer[0][1], 32)])
        formula = z3.And(self.thread.in_launch(self.launch), reader_guard, OTHER.in_launch(self.launch),
                         OTHER.same_block(self.thread), guard, offset == reader_offset, other_than_hint)
        ob = Obligation(f"equivalence: the shared store at line {store.line} has one writer for the read at line "
                        f"{store.line}", "equivalence", formula)
        outcome = self.checker.check(ob, self.timeout_s)
        self.record(ob, outcome)
        return outcome.status == PROVED

    def _opaque(self, read: SharedRead, why: str) -> z3.ExprRef:
        name = f"opaque!shared{read.line}.{len(self.ctx.opaque)}"
        self.ctx.opaque[name] = f"the shared read at line {read.line}: {why}"
        return z3.Const(name, read.symbol.sort())


def resolve(ctx: KernelContext, thread: Thread, launch: Launch, shared: set[str], propose: Callable,
            checker: Checker, timeout_s: float, record, accepted: dict) -> None:
    Resolver(ctx, launch, shared, propose, checker, timeout_s, record, accepted).run()
