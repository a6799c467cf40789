"""Nearest kept ancestors in a hierarchy, in time polynomial in its size.

Taking a term out of a hierarchy (`prune`) replaces every edge to it by edges to its nearest
kept ancestors: those reached through taken-out terms only. Walking every path up from each
term finds them, but a hierarchy has exponentially many paths (a closed chain of 40 unlabelled
classes has 2^39 from its bottom), so a walk per path never ends. Here each taken-out term's
answer is computed once, from its parents' answers, parents first: a term's answer is its
parents' answers joined in the order of its parents (a kept parent answers itself), which is
exactly the order a walk of every path would first meet them in.

Cycles (RDFS allows them) are handled on the condensation: the terms of one strongly connected
component reach the same kept ancestors, but a walk of every path meets them in an order that
depends on where it enters the cycle. Each member of a cycle is therefore walked once,
depth-first, inside its component (each term visited once, so a walk is linear in the
component's edges), taking the answers of the components below it ready-made. A component
with more than `CYCLE_WORK` member × edge steps (a cycle of thousands of unlabelled classes)
gives all its members the order of its first member's walk: the same ancestors, in an order
that may differ from a walk started at each member.
"""

from __future__ import annotations

from typing import Container, Iterator, Mapping, Sequence

#: Above this many steps (members × edges inside one strongly connected component), the
#: members of a cycle share one walk's order instead of each walking it (see the module).
CYCLE_WORK = 2_000_000
#: Hierarchies of more terms than this show a progress bar (on a terminal).
PROGRESS_AT = 50_000


def nearest_kept(parents: Mapping[str, Sequence[str]], dropped: Container[str]
                 ) -> dict[str, tuple[str, ...]]:
    """For every dropped key of `parents`, and every dropped term above one: its nearest
    kept ancestors, in the order a depth-first walk of every path up from it, parents in
    their listed order, first meets them (a kept term's nearest kept ancestor is itself; a
    dropped term left out is no key and has no parents, so it has none).

    Time: the condensation and one pass over it in topological order, each term's answer
    joined from its parents' answers (linear in the edges times the answers' lengths), plus
    one walk of its component per member of a cycle.
    """
    out: dict[str, tuple[str, ...]] = {}
    for members in _progress(_components(parents, dropped), parents):
        if len(members) == 1:
            (term,) = members
            out[term] = _joined(term, parents.get(term, ()), dropped, out)
        else:
            _cycle(set(members), parents, dropped, out)
    return out


def _components(parents: Mapping[str, Sequence[str]], dropped: Container[str]
                ) -> Iterator[list[str]]:
    """The strongly connected components of the dropped terms (edges child → dropped
    parent), each after every component it reaches: Tarjan's algorithm, which yields them
    in that order as it goes, kept iterative because a hierarchy may be deeper than Python's
    stack. (networkx's condensation and topological sort give the same order at ten times
    the cost on a 100,000-class hierarchy.)"""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def enter(term: str) -> tuple[str, Iterator[str]]:
        index[term] = low[term] = len(index)
        stack.append(term)
        on_stack.add(term)
        return term, iter(parents.get(term, ()))

    for root in parents:
        if root not in dropped or root in index:
            continue
        work = [enter(root)]
        while work:
            term, ps = work[-1]
            for p in ps:
                if p not in index and p in dropped:
                    work.append(enter(p))
                    break
                if p in on_stack:
                    low[term] = min(low[term], index[p])
            else:
                work.pop()
                if work:
                    above = work[-1][0]
                    low[above] = min(low[above], low[term])
                if low[term] == index[term]:
                    yield _pop_component(stack, on_stack, term)


def _pop_component(stack: list[str], on_stack: set[str], root: str) -> list[str]:
    """The component Tarjan's stack holds down to `root`, taken off it."""
    members = []
    while True:
        term = stack.pop()
        on_stack.discard(term)
        members.append(term)
        if term == root:
            return members


def _progress(components: Iterator[list[str]], parents: Mapping[str, Sequence[str]]
              ) -> Iterator[list[str]]:
    """`components`, with a progress bar on stderr when the hierarchy is large (and stderr
    a terminal): the one phase of pruning whose time grows with the hierarchy."""
    if len(parents) < PROGRESS_AT:
        return components
    from tqdm import tqdm

    return iter(tqdm(components, desc="hierarchy", unit=" components", leave=False,
                     disable=None))


def _joined(term: str, ps: Sequence[str], dropped: Container[str],
            out: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The parents' answers joined in order, each ancestor once (a parent on no cycle
    with `term` already has its answer). A single contributing answer is shared, not
    copied, so a chain of dropped terms holds one tuple."""
    parts = [out.get(p, ()) if p in dropped else (p,) for p in ps if p != term]
    parts = [part for part in parts if part]
    if len(parts) == 1:
        return parts[0]
    joined = dict.fromkeys(a for part in parts for a in part)
    return tuple(joined)


def _cycle(members: set[str], parents: Mapping[str, Sequence[str]], dropped: Container[str],
           out: dict[str, tuple[str, ...]]) -> None:
    """Answers for the members of one strongly connected component (see the module)."""
    inside = sum(p in members for m in members for p in parents.get(m, ()))
    order = sorted(members)
    if len(members) * inside > CYCLE_WORK:
        shared = _walk(order[0], members, parents, dropped, out)
        out.update(dict.fromkeys(order, shared))
        return
    for term in order:
        out[term] = _walk(term, members, parents, dropped, out)


def _walk(start: str, members: set[str], parents: Mapping[str, Sequence[str]],
          dropped: Container[str], out: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    """Depth-first from `start` inside its component, each member entered once; a kept
    parent is met, a dropped parent below the component brings its answer. Meeting order
    is that of a walk of every path: re-entering a term a walk has left meets nothing new."""
    met: dict[str, None] = {}
    entered = {start}
    stack = [iter(parents.get(start, ()))]
    while stack:
        for p in stack[-1]:
            if p not in dropped:
                met.setdefault(p)
            elif p not in members:
                met.update(dict.fromkeys(out.get(p, ())))
            elif p not in entered:
                entered.add(p)
                stack.append(iter(parents.get(p, ())))
                break
        else:
            stack.pop()
    return tuple(met)
