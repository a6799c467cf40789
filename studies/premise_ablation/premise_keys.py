"""What identifies a premise's memorizing probe (`PremiseKey`) and its outcome
(`MemorizedPremise`): the P1/P2 "implicit" split is decided per key, stored per key in
``memorized.json`` and shared by every rule whose items hold that premise.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from kgprobe.reasoning.items import ReasoningItem


@dataclass(frozen=True)
class PremiseKey:
    """One premise's memorizing probe. Schema premises (P1) involve no pseudowords, so one
    probe serves every pair (`pair` None). A premise that several rules share (a subclass
    edge is rdfs9's and rdfs11's P1) is one probe with one outcome."""

    role: str  # P1 | P2
    relation: str
    subject: str
    answer: str
    pair: int | None

    @classmethod
    def of(cls, item: ReasoningItem, role: str, pair: int) -> "PremiseKey":
        p = item.premises[0 if role == "P1" else 1]
        return cls(role, p.relation, p.subject, p.answer, pair if role == "P2" else None)

    @property
    def stratum(self) -> tuple[str, str]:
        """The population the premise is ranked in: its relation, schema (P1) or pseudoword
        (P2) premises apart."""
        return self.role, self.relation

    @property
    def seed(self) -> str:
        """Seed material of the probe's distractors and its place among equal ranks."""
        pair = "-" if self.pair is None else self.pair
        return f"{self.role}|{self.relation}|{self.subject}|{self.answer}|{pair}"


@dataclass
class MemorizedPremise:
    """A premise probe's outcome: the gold's reciprocal rank under the model, and whether it
    counts as known. `rank` is the model's pessimistic rank of the gold (0: the gold is not
    among the candidates), `null_rank` the frequency control's on the same candidates (None
    in a file written before the null existed: the earlier relative split)."""

    key: PremiseKey
    rr: float
    known: bool
    prompt: str
    rank: int = 0
    null_rank: int | None = None

    def to_json(self) -> dict:
        return {**asdict(self.key), "rr": self.rr, "known": self.known, "prompt": self.prompt,
                "rank": self.rank, "null_rank": self.null_rank}

    @classmethod
    def from_json(cls, row: dict) -> "MemorizedPremise":
        fields = {f: row[f] for f in ("role", "relation", "subject", "answer", "pair")}
        rank = row.get("rank", round(1 / row["rr"]) if row["rr"] > 0 else 0)
        return cls(PremiseKey(**fields), row["rr"], row["known"], row["prompt"], rank,
                   row.get("null_rank"))
