"""`kgprobe report RUN` rebuilds the report of any study's run folder, found from its results.csv."""

from __future__ import annotations

from kgprobe.cli import main


def test_report_rebuilds_a_memorization_run(tmp_path, capsys):
    out = tmp_path / "mem"
    assert main(["probe", "memorizing", "--model", "frequency", "--task", "domain",
                 "--out", str(out)]) == 0
    first = (out / "report.md").read_text(encoding="utf-8")
    assert "domain" in first and "MRR" in first
    (out / "report.md").unlink()
    assert main(["report", str(out)]) == 0
    assert "(memorization)" in capsys.readouterr().out
    assert (out / "report.md").read_text(encoding="utf-8") == first


def test_report_refuses_a_folder_that_is_no_run(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no results.csv" in err[0]
    (tmp_path / "results.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    assert main(["report", str(tmp_path)]) == 2
    assert "not written by a kgprobe study" in capsys.readouterr().err
    (tmp_path / "config.json").write_text("{\"limit\": 3}", encoding="utf-8")
    assert main(["report", str(tmp_path)]) == 2
    assert "names no study" in capsys.readouterr().err
