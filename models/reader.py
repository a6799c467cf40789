"""``--model reader``: a positive control that reads the written premises and applies RDFS.

Why a positive control: a claim rule must be shown to find reasoning where there is some,
not only to refuse heuristics. The reader is a weightless model that does reason, from the
words of the prompt alone: it parses the premises written before the conjunction
("Therefore ,") with the English templates (`ontology/templates.toml`: a premise is its
relation's first manual template with the answer filled in; a domain or range premise
writes the property through its ``as_subject`` / ``as_object`` clause; a fact is its
property's pattern sentence, "[X]'s government is headed by [Y] ."), turns them into triples
over the written terms (labels, slots [X]/[Y], property wordings), closes them under RDFS
rules rdfs2/3/5/7/9/11 with the project's engine (`reasoning.rdfs.closure`, chaining
included) and ranks the candidates the hypothesis then holds for first. Unlike a control it
knows how to reason, so it is an ordinary model to the claim rule (`models.names.
is_control_model` is false): a run of it must be claimed wherever written premises decide
the answer, and a claim rule that does not claim it is wrong.

What it ranks first, in order: the candidates the hypothesis makes entailed, those whose
shortest proof uses more written premises first (a derived answer before one merely written
— "[X] is a brewery . Brewery is an agent ." ranks agent, then brewery —, and the end of a
chain before its middle), ties and then every other candidate in `FrequencyBaseline`'s
order. So a prompt with nothing written (or nothing it can read: soft templates, another
language) is ranked exactly as ``frequency`` ranks it.

Only the written premises count; a false one (a counterfactual cell) is followed like a true
one; distractor premises are read and enter no proof of the hypothesis. rdfs7 links the
property a premise names by its label ("head of government") to the wording a fact uses
and the candidates are ("'s government is headed by", "'s chairperson is") through
`models.lexicon`, the one place it reads more than the templates' words.

``reader:Q`` (Q in 0…100) reads on a seeded Q % of the items and ranks like ``frequency``
on the rest (a reasoner of known partial strength, to measure a claim rule's power).
Which items: a scorer sees prompts and a candidate list, not item ids. Under sampled
candidates (``--candidates K``) each item ranks its own list, the same in every cell of it
(grid, counterfactual and depth-1 cells share the item's list; a depth-k item is an item of
its own), so the decision hashes the run's seed with the sorted list (`reads_item`). Under
``--candidates all`` every item of a kind shares one list: the decision is then one draw
for all of them (Q % of runs read everything) and no share of items can be asked for.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from kgprobe.errors import ModelError
from kgprobe.models.baselines import FrequencyBaseline, FrequencyModel, stable_seed
from kgprobe.models.lexicon import best_match

__all__ = ["READER", "ReaderBaseline", "ReaderModel", "Reading", "read_prompt", "reader_share",
           "reads_item"]

READER = "reader"
TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
SUBCLASS = "http://www.w3.org/2000/01/rdf-schema#subClassOf"
SUBPROP = "http://www.w3.org/2000/01/rdf-schema#subPropertyOf"
DOMAIN = "http://www.w3.org/2000/01/rdf-schema#domain"
RANGE = "http://www.w3.org/2000/01/rdf-schema#range"
VOCABULARY = frozenset({TYPE, SUBCLASS, SUBPROP, DOMAIN, RANGE})
#: A slot of a prompt ([X], [Y], [Y0]); never [MASK].
SLOT = re.compile(r"\[(?!MASK\])[^\[\]\s]+\]")
#: What an article the templates fill in front of a term may be.
ARTICLE = r"(?:a|an|the)\s+"


def reader_share(name: str) -> int | None:
    """The share of items ``name`` reads (``reader`` → 100, ``reader:Q`` → Q), None when
    `name` is no reader; a bad Q is one line naming the fix."""
    if name == READER:
        return 100
    if not name.startswith(READER + ":"):
        return None
    q = name[len(READER) + 1:]
    if not q.isdigit() or not 0 <= int(q) <= 100:
        raise ModelError(f"--model {name}: give the share of items the reader reads as a whole "
                         f"number from 0 to 100 (e.g. {READER}:50)")
    return int(q)


def reads_item(seed: int, candidates: Sequence[str], share: int) -> bool:
    """Whether ``reader:share`` reads the item whose candidate list is `candidates`: one
    seeded draw per (seed, sorted list), so every prompt of an item gets the same answer."""
    if share >= 100:
        return True
    if share <= 0:
        return False
    draw = np.random.default_rng(stable_seed(seed, READER, *sorted(candidates))).random()
    return bool(draw < share / 100)


# --------------------------------------------------------------------------------------
# Parsing: the templates' sentences back into triples
# --------------------------------------------------------------------------------------


def _key(text: str) -> str:
    """A written term as a node: slots as they are, labels in lower case, spaces collapsed."""
    text = " ".join(text.split())
    return text if SLOT.fullmatch(text) else text.lower()


def _template_regex(template: Any, **fields: str) -> re.Pattern:
    """A template's sentence as a regex: `fields` (``a``, ``b``, ``m``, ``meta``) as named
    groups, the article a filled mask takes as any article."""
    marks = {"a": "QQAQQ", "b": "QQBQQ", "m": "QQMQQ", "meta": "QQCQQ"}
    text = template.render(text_a=marks["a"], text_b=marks["b"], mask=marks["m"],
                           meta={"as_subject": marks["meta"], "as_object": marks["meta"]})
    words = text.rstrip(" .").split()
    parts = []
    for n, word in enumerate(words):
        if word.lower() in ("a", "an") and n + 1 < len(words) and words[n + 1] == marks["m"]:
            parts.append("(?:a|an|the)")  # `Template.fill` puts the answer's own article here
        else:
            parts.append(re.escape(word))
    pattern = r"\s+".join(parts)
    for name, mark in marks.items():
        pattern = pattern.replace(mark, fields.get(name, rf"(?P<{name}>.+?)"), 1)
    return re.compile(r"\s*" + pattern + r"\s*", re.IGNORECASE)


@lru_cache(maxsize=4)
def _grammar(lang: str = "en") -> dict[str, Any]:
    """The premise and hypothesis regexes of the bundled templates of `lang`."""
    from kgprobe.ontology.verbalize import load_templates

    templates = load_templates(lang=lang)
    premise = [(rel, _template_regex(templates[rel].premise))
               for rel in ("domain", "range", "subPropertyOf", "subClassOf")]
    # type and subClassOf hypotheses ask the same of the closure ("[X] has class [MASK]",
    # "[X] has superclass [MASK]": which classes is it under)
    hypothesis = [("subClassOf" if rel == "type" else rel, _template_regex(t, m=r"\[MASK\]"))
                  for rel in ("property", "subPropertyOf", "type", "subClassOf")
                  for t in templates[rel].manual if t.n_soft == 0]
    return {"premise": premise, "hypothesis": hypothesis, "conjunction": templates.conjunction}


def _fact(sentence: str) -> tuple[str, str, str, str] | None:
    """A fact's (subject slot, pattern, middle wording, object slot): a sentence with two
    different slots, subject first."""
    slots = list(dict.fromkeys(m.group(0) for m in SLOT.finditer(sentence)))
    if len(slots) != 2:
        return None
    x, y = slots
    pattern = sentence.replace(x, "[X]").replace(y, "[Y]")
    if pattern.count("[X]") != 1 or pattern.count("[Y]") != 1:
        return None
    from kgprobe.ontology.verbalize import pattern_middle

    return x, pattern, " ".join(pattern_middle(pattern).lower().split()), y


def _clause_regexes(pattern: str, role: str) -> list[re.Pattern]:
    """How a domain (`role` "domain": ``as_subject``) or range (``as_object``) clause writes
    the property of `pattern` (`ontology.verbalize.property_meta`): the subject "one" and an
    object "something"/"a C", or a subject "something"/"a C" and the object "that". A domain
    clause may have taken the range out of the pattern ("is part of constellation [Y]" →
    "one is part of a constellation"): each split of the words before [Y] is tried."""
    any_term = rf"(?:something|{ARTICLE}.+?)"
    x, y = ("one", any_term) if role == "domain" else (any_term, "that")

    def regex(p: str, y_text: str) -> re.Pattern:
        esc = r"\s+".join(re.escape(w) for w in p.split())
        esc = esc.replace(re.escape("[X]"), x).replace(re.escape("[Y]"), y_text)
        return re.compile(esc, re.IGNORECASE)

    out = [regex(pattern, y)]
    found = re.search(r"((?:\s+[^\s\[\]]+)+)\s+\[Y\]", pattern)
    if role == "domain" and found:
        words = found.group(1).split()
        for i in range(1, len(words)):
            named = " ".join(words[i:])
            head = pattern[:found.start(1)] + " " + " ".join(words[:i]) + " [Y]" + pattern[found.end():]
            out.append(regex(head, ARTICLE + re.escape(named)))
    return out


class Reading:
    """One prompt read: its written triples, what they entail, and with how many premises.

    `support[t]`: the fewest written premises a proof of triple `t` uses (1 for a written
    one). `query`: the hypothesis as (relation, subject, object) with the mask's place
    None, or None when the hypothesis is not one the templates write."""

    def __init__(self, support: Mapping[tuple, int], query: tuple | None):
        self.support = dict(support)
        self.query = query

    def entailed(self) -> dict[str, int]:
        """The nodes the hypothesis holds for → the premises their proof uses."""
        if self.query is None:
            return {}
        rel, s, o = self.query
        out: dict[str, int] = {}
        for (a, p, b), n in self.support.items():
            if rel == "property" and a == s and b == o and p not in VOCABULARY:
                hit = p
            elif rel == "subPropertyOf" and a == s and p == SUBPROP:
                hit = b
            elif rel == "subClassOf" and a == s and p in (TYPE, SUBCLASS):
                hit = b
            else:
                continue
            if hit != s:
                out[hit] = max(out.get(hit, 0), n)
        return out


@lru_cache(maxsize=4096)
def read_prompt(prompt: str) -> Reading:
    """Parse `prompt`'s premises and hypothesis and close the premises under RDFS."""
    grammar = _grammar()
    conjunction = grammar["conjunction"]
    if conjunction not in prompt:
        return Reading({}, None)
    premises, hypothesis = prompt.rsplit(conjunction, 1)
    query = _hypothesis(hypothesis, grammar["hypothesis"])
    sentences = [s for s in re.split(r"\s+\.(?:\s+|$)", premises.strip()) if s.strip()]
    written: dict[tuple, int] = {}  # triple -> the sentence that writes it
    facts, clauses = [], []
    for n, sentence in enumerate(sentences):
        fact = _fact(sentence)
        if fact is not None:
            x, pattern, middle, y = fact
            facts.append((pattern, "w:" + middle))
            written.setdefault((x, "w:" + middle, y), n)
            continue
        for rel, regex in grammar["premise"]:
            m = regex.fullmatch(sentence)
            if m is None:
                continue
            if rel in ("domain", "range"):
                clauses.append((rel, m.group("meta"), _key(m.group("m")), n))
            else:
                a = _key(m.group("a"))
                p = SUBPROP if rel == "subPropertyOf" else TYPE if SLOT.fullmatch(a) else SUBCLASS
                written.setdefault((a, p, _key(m.group("m"))), n)
            break
    # a domain/range premise names a fact's property by a clause; the two templates read
    # alike, so the clause's shape ("one …" or "… that") says which it is
    for _, clause, cls, n in clauses:
        for pattern, node in facts:
            for rel, predicate in (("domain", DOMAIN), ("range", RANGE)):
                if any(r.fullmatch(clause) for r in _clause_regexes(pattern, rel)):
                    written.setdefault((node, predicate, cls), n)
    links = _lexicon_links(written)
    return Reading(_supports(written, links), query)


def _hypothesis(text: str, regexes: list[tuple[str, re.Pattern]]) -> tuple | None:
    text = text.strip().rstrip(".").strip()
    for rel, regex in regexes:
        m = regex.fullmatch(text)
        if m is not None:
            b = m.groupdict().get("b")
            return rel, _key(m.group("a")), _key(b) if b else None
    return None


def _lexicon_links(written: Mapping[tuple, int]) -> list[tuple]:
    """A fact's wording and the property label a premise names for it ("'s government is
    headed by" ↔ "head of government"), as sub-properties of each other: no premise."""
    labels = sorted({t for (a, p, b) in written if p == SUBPROP for t in (a, b)
                     if not SLOT.fullmatch(t)})
    links = []
    for node in sorted({p for (_, p, _) in written if p.startswith("w:")}):
        label = best_match(node[2:], labels)
        if label is not None:
            links += [(node, SUBPROP, label), (label, SUBPROP, node)]
    return links


def _supports(written: Mapping[tuple, int], links: Iterable[tuple]) -> dict[tuple, int]:
    """Every entailed triple → the fewest written premises in a proof of it."""
    from kgprobe.reasoning.rdfs import closure

    links = list(links)
    if not written:
        return {}
    support: dict[tuple, frozenset] = {t: frozenset({n}) for t, n in written.items()}
    for t in links:
        support.setdefault(t, frozenset())
    derivations = list(closure(list(support)).derivations())
    changed = True
    while changed:
        changed = False
        for d in derivations:
            p1, p2 = support.get(d.premises[0]), support.get(d.premises[1])
            if p1 is None or p2 is None:
                continue
            both = p1 | p2
            old = support.get(d.conclusion)
            if old is None or len(both) < len(old):
                support[d.conclusion] = both
                changed = True
    return {t: len(s) for t, s in support.items()}


# --------------------------------------------------------------------------------------
# Scorer and model
# --------------------------------------------------------------------------------------


def candidate_of(node: str, keys: Sequence[str], wordings: bool) -> int | None:
    """The candidate (of `keys`, the candidates in lower case) a node is: the same words (a
    label, a wording), else, where the candidates are `wordings` (an rdfs7 hypothesis), the
    wording the lexicon matches a property label to ("chairperson" → "'s chairperson is")."""
    text = node[2:] if node.startswith("w:") else node
    if text in keys:
        return keys.index(text)
    if not wordings or node.startswith("w:") or SLOT.fullmatch(node):
        return None
    found = best_match(text, keys)
    return keys.index(found) if found is not None else None


class ReaderBaseline(FrequencyBaseline):
    """Entailed candidates first (more written premises in their proof first), then frequency."""

    ranks_prompts = True

    def __init__(self, train_golds, seed: int = 0, name: str = READER, share: int = 100):
        super().__init__(train_golds, seed=seed, name=name)
        self.share = int(share)

    def score(self, prompts, candidates, *, pseudowords=None, batch_size: int = 32) -> np.ndarray:
        fallback = np.empty(len(candidates), dtype=np.int64)
        fallback[self.ranking(candidates)] = np.arange(len(candidates))
        reads = reads_item(self.seed, candidates, self.share)
        keys = [" ".join(c.lower().split()) for c in candidates]
        out = np.zeros((len(prompts), len(candidates)), dtype=np.float64)
        for row, prompt in enumerate(prompts):
            proof = [0] * len(candidates)
            reading = read_prompt(prompt) if reads else None
            if reading is not None and reading.query is not None:
                wordings = reading.query[0] == "property"
                for node, n in reading.entailed().items():
                    i = candidate_of(node, keys, wordings)
                    if i is not None:
                        proof[i] = max(proof[i], n)
            order = sorted(range(len(candidates)), key=lambda i: (-proof[i], int(fallback[i])))
            out[row, order] = -np.arange(len(candidates), dtype=np.float64)
        return out


class ReaderModel(FrequencyModel):
    """``--model reader`` / ``reader:Q``: reads the premises (on Q % of the items), else
    ranks as ``frequency``; trained on a relation's answers as ``frequency`` is."""

    def __init__(self, name: str, *, seed: int = 0, answers=()):
        super().__init__(name, seed=seed, answers=answers)
        self.share = reader_share(name) if reader_share(name) is not None else 100

    def trained_on(self, answers) -> "ReaderModel":
        return ReaderModel(self.name, seed=self.seed, answers=answers)

    def scorer(self, **settings: Any) -> ReaderBaseline:
        return ReaderBaseline(self.answers, seed=self.seed, name=self.name, share=self.share)
