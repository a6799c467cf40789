"""The small zoo ontology the premise-ablation tests reason over, written once.

Every RDFS rule has items in it: subclass chains (rdfs9, rdfs11), a subproperty chain with
worded relations (rdfs5, rdfs7) and domains and ranges (rdfs2, rdfs3). A test that needs more
(classes that stand beside the items as distractors, an extra instance) appends its own lines.
"""

from __future__ import annotations

from pathlib import Path

ZOO = """@prefix ex: <http://ex.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix kgp: <https://w3id.org/kgprobe/vocab#> .
ex:Dog rdfs:subClassOf ex:Mammal . ex:Cat rdfs:subClassOf ex:Mammal .
ex:Mammal rdfs:subClassOf ex:Animal . ex:Animal rdfs:subClassOf ex:Agent .
ex:ZooKeeper rdfs:subClassOf ex:Person . ex:Person rdfs:subClassOf ex:Agent .
ex:caresFor rdfs:domain ex:ZooKeeper ; rdfs:range ex:Animal ; rdfs:subPropertyOf ex:knows ;
    kgp:pattern "[X] takes care of [Y] ."@en .
ex:feeds rdfs:domain ex:Person ; rdfs:range ex:Mammal ; rdfs:subPropertyOf ex:caresFor .
ex:knows rdfs:subPropertyOf ex:relatedTo ; kgp:pattern "[X] knows [Y] ."@en .
ex:rex a ex:Dog . ex:tom a ex:Cat . ex:ann a ex:ZooKeeper .
ex:ann ex:caresFor ex:rex . ex:bob ex:feeds ex:tom .
"""


def write_zoo(folder: Path, extra: str = "") -> Path:
    """``folder/zoo.ttl``: the zoo and the test's own `extra` Turtle lines."""
    path = Path(folder) / "zoo.ttl"
    path.write_text(ZOO + extra, encoding="utf-8")
    return path
