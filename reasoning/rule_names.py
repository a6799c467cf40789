"""The RDFS rules kgprobe derives entailments with, by name: what option parsers list and
check without importing the engine (numpy) that applies them (`reasoning.rdfs`)."""

RULES: tuple[str, ...] = ("rdfs2", "rdfs3", "rdfs5", "rdfs7", "rdfs9", "rdfs11")
