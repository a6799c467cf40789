"""kgprobe: probe whether pretrained language models know and reason with an ontology."""

__version__ = "0.1.0"
