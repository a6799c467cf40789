"""`kgprobe study multiple-choice` (alias `kgprobe probe multiple-choice`): options and the command."""

from __future__ import annotations

import argparse
from pathlib import Path

from kgprobe.errors import StudyError
from kgprobe.studies.options import dry_run_done, dry_run_option, finish, threads_option


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None,
                   help="a preset, HF id, local dir or .gguf file (causal for --answer letter); "
                        "required unless --dry-run")
    p.add_argument("--task", default="all",
                   help="all, memorizing, reasoning, or a comma list: type…range (TP…RG), "
                        "rdfs2…rdfs11, or one file such as rdfs9-12")
    p.add_argument("--data", type=Path, default=None,
                   help="a directory with memorizing/ and reasoning/ question files "
                        "(default: the paper's, bundled)")
    p.add_argument("--limit", type=int, default=None, help="questions per file (default: all)")
    p.add_argument("--instruction", default=None,
                   help="text after each question (default: 'Answer with the letter of the "
                        "correct option.'; '' for none)")
    p.add_argument("--answer", choices=["letter", "text"], default="letter",
                   help="letter: the paper's protocol, the option letter as the next token (causal "
                        "models); text: each option's text in an 'Answer: [MASK]' slot after the "
                        "question without its option list (any model)")
    p.add_argument("--chat", choices=["auto", "on", "off"], default="auto",
                   help="wrap the question in the tokenizer's chat template (auto: if it has one)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto")
    p.add_argument("--batch-size", type=int, default=4, help="questions scored at once")
    threads_option(p)
    p.add_argument("--out", required=True, type=Path,
                   help="the run folder: results, report and every unit written as it finishes; rerun into it to resume")
    dry_run_option(p)


def run_cli(args: argparse.Namespace) -> int:
    chat = {"auto": None, "on": True, "off": False}[args.chat]
    if args.dry_run:
        from .config import MultipleChoiceConfig
        from .dry_run import dry_run

        config = MultipleChoiceConfig(args.model or "-", tasks=args.task, data=args.data,
                                      limit=args.limit, instruction=args.instruction, chat=chat,
                                      answer=args.answer)
        return dry_run_done(args.out, dry_run(config, args.out))
    if not args.model:
        raise StudyError("kgprobe study multiple-choice needs --model NAME (or --dry-run to "
                         "write the prompts without one)")
    from .report import write_report
    from .study import format_table, run_multiple_choice

    rows = run_multiple_choice(args.model, args.out, tasks=args.task, data=args.data,
                               limit=args.limit, instruction=args.instruction, chat=chat,
                               answer=args.answer, device=args.device, batch_size=args.batch_size)
    return finish(args.out, format_table(rows), write_report)


def register_cli(sub, name: str = "multiple-choice") -> None:
    p = sub.add_parser(name, help="the paper's 20-option questions (§5), accuracy")
    add_arguments(p)
    p.set_defaults(func=run_cli)
