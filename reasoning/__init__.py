from kgprobe.reasoning.rdfs import (
    RULES,
    Closure,
    Derivation,
    Triple,
    UnknownRuleError,
    closure,
)

__all__ = ["RULES", "Closure", "Derivation", "Triple", "UnknownRuleError", "closure"]
