"""The RDFS engine's public names, imported from `reasoning.rdfs` on first use: importing a
module of this package (the CLI's parsers do) then costs no numpy."""

__all__ = ["RULES", "Closure", "Derivation", "Triple", "UnknownRuleError", "closure"]


def __getattr__(name: str):
    if name in __all__:
        from kgprobe.reasoning import rdfs

        return getattr(rdfs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
