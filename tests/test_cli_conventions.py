"""One CLI convention across commands (issue 18 item 16), held by walking every command's options and help:
`-o` is always `--out` (`check` keeps `--report-dir` as a former spelling of the same option), `--db PATH`
everywhere, `-q` is always `--quiet` and exists on check, score, decide, promote and release create, and
`check --help` lists the check names. On 9f6a155 `check -o` was `--report-dir`, `--db` showed `<str>` and
promote/score/release create had no `-q`."""

import pytest
import typer
from typer.testing import CliRunner

from gate.cli import app
from gate.names import CHECK_NAMES
from tests.conftest import gate_inprocess, triage_row, write_jsonl


def _leaves():
    def walk(group, prefix):
        for name, cmd in sorted(group.commands.items()):
            if hasattr(cmd, "commands"):
                yield from walk(cmd, (*prefix, name))
            else:
                yield " ".join((*prefix, name)), cmd

    return list(walk(typer.main.get_command(app), ()))


LEAVES = _leaves()


def _help(name: str) -> str:
    res = CliRunner().invoke(app, [*name.split(), "--help"], terminal_width=200)
    assert res.exit_code == 0, (name, res.output)
    return " ".join(res.output.split())


def test_output_quiet_and_db_options_mean_one_thing_everywhere():
    outs = set()
    for name, cmd in LEAVES:
        for p in cmd.params:
            opts = set(p.opts) | set(p.secondary_opts)
            if "-o" in opts or "--out" in opts:
                assert {"-o", "--out"} <= opts, (name, opts)
                outs.add(name)
            assert not opts & {"--output", "--output-dir", "--out-dir"}, (name, opts)
            if "--report-dir" in opts:
                assert name == "check" and "--out" in opts  # the former spelling, same option
            if "-q" in opts or "--quiet" in opts:
                assert {"-q", "--quiet"} <= opts, (name, opts)
            if "--db" in opts:
                assert p.metavar == "PATH", name
                assert "--db PATH" in _help(name), name
    assert {"check", "score", "split", "scrub", "export", "decide", "demo", "report-html", "schema",
            "contract init"} <= outs


@pytest.mark.parametrize("name", ["check", "score", "decide", "promote", "release create", "train",
                                  "contract lint"])
def test_quiet_where_scripts_want_one_line(name):
    assert "-q, --quiet" in _help(name)


def test_check_help_lists_every_check():
    text = _help("check")
    assert "--checks" in text
    listed = text.split("--checks", 1)[1]
    for check in CHECK_NAMES:
        assert check in listed, check


@pytest.mark.parametrize("spelling", ["-o", "--out", "--report-dir"])
def test_check_writes_its_report_where_each_spelling_says(tmp_path, spelling):
    write_jsonl(tmp_path / "data" / "train.jsonl", [triage_row(i) for i in range(3)])
    out = tmp_path / "rep"
    res = gate_inprocess("check", str(tmp_path / "data"), "-c", "contracts/triage.yaml", "--checks", "contract",
                         "--no-db", spelling, str(out), "-q", split=True)
    assert res.returncode in (0, 100), res.stderr
    assert (out / "report.json").is_file() and (out / "report.md").is_file()


def test_promote_quiet_is_the_verdict_line_only(tmp_path):
    from tests.dashboard_seed import seed_small

    db = str(tmp_path / "g.duckdb")
    seed = seed_small(db, scorecards=("triage",), releases=2)
    blocked = seed["releases"][0]
    loud = gate_inprocess("promote", blocked, "--db", db, split=True)
    quiet = gate_inprocess("promote", blocked, "--db", db, "-q", split=True)
    assert loud.returncode == quiet.returncode == 100
    assert len(loud.stdout.splitlines()) > 1 and "  - " in loud.stdout
    assert quiet.stdout.splitlines() == [f"REFUSED: {blocked} is not promoted; current is unchanged"]


def test_the_docs_spell_check_output_as_out_not_its_former_name():
    """README and docs/ teach `gate check -o/--out`; `--report-dir` is only the former spelling kept for old scripts
    (the README's tour still taught it after the rename)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            assert not ("gate check" in line and "--report-dir" in line), f"{doc.name}:{n}: {line}"


def test_choice_enums_are_the_cores_names():
    """The CLI's choices are the core's names: token roles are the service's own enum (the CLI had a copy), and the
    enums kept as copies (so `gate --help` does not import yaml) equal the constants they mirror."""
    from gate import cli
    from gate.export.formats import FORMATS
    from gate.service.auth import Role
    from gate.train.runners import RUNNERS

    assert cli.TokenRole is Role
    assert [e.value for e in cli.ExportFormat] == list(FORMATS)
    assert sorted(e.value for e in cli.TrainRunner) == sorted(RUNNERS)
