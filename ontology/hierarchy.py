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
#: Hierarchies with more taken-out terms than this show a progress bar on a terminal.
PROGRESS_AT = 50_000


def nearest_kept(parents: Mapping[str, Sequence[str]], dropped: Container[str]
                 ) -> dict[str, tuple[str, ...]]:
    """For every dropped term that `parents` names (as a child or as a parent): its nearest
    kept ancestors, in the order a depth-first walk of every path up from it, parents in
    their listed order, first meets them. A kept term's nearest kept ancestor is itself.

    Time: the condensation and one pass over it in topological order, each term's answer
    joined from its parents' answers (linear in the edges times the answers' lengths), plus
    one walk of its component per member of a cycle.
    """
    import networkx as nx

    graph = nx.DiGraph()
    for child, ps in parents.items():
        if child in dropped:
            graph.add_node(child)
            graph.add_edges_from((child, p) for p in ps if p in dropped)
    condensed = nx.condensation(graph)
    out: dict[str, tuple[str, ...]] = {}
    for component in _progress(reversed(list(nx.topological_sort(condensed))),
                               len(condensed), graph.number_of_nodes()):
        members = condensed.nodes[component]["members"]
        if len(members) == 1:
            (term,) = members
            out[term] = _joined(term, parents.get(term, ()), dropped, out)
        else:
            _cycle(members, parents, dropped, out)
    return out


def _progress(components: Iterator[int], total: int, terms: int) -> Iterator[int]:
    """`components`, with a progress bar on stderr when the hierarchy is large (and stderr
    a terminal): the one phase of pruning whose time grows with the hierarchy."""
    if terms < PROGRESS_AT:
        return components
    from tqdm import tqdm

    return iter(tqdm(components, total=total, desc="hierarchy", unit="class", leave=False,
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
