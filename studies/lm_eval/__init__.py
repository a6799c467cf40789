"""kgprobe's probes on lm-evaluation-harness: export a task folder, import its logged samples."""
