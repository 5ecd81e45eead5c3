"""`gate contract init DATASET [-o FILE]` and `gate contract lint FILE`: writing a contract without the source."""

from __future__ import annotations

import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

from gate.errors import ExitCode, GateError


def run_contract_init(*, dataset: str, out: str | None, name: str | None, force: bool, verify: bool) -> int:
    """Infers a contract, proves it loads (and, with `verify`, that the contract check passes on the dataset),
    then writes it atomically; nothing is written when it would not load."""
    from gate.contract.init import infer, render
    from gate.contract.model import load_contract

    if out and Path(out).exists() and not force:
        raise GateError("exists already (use --force to replace it)", file=out)
    contract, why, notes = infer(dataset, name)
    text = render(contract, why, notes)
    with tempfile.TemporaryDirectory() as tmp:  # load what would be written, before writing it
        probe = Path(tmp) / "contract.yaml"
        probe.write_text(text, encoding="utf-8")
        loaded = load_contract(probe)
        summary = None
        if verify:
            from gate.data.runner import run_checks

            res = run_checks(dataset, loaded, checks=["contract"], progress=False).results[0]
            rules = Counter(f.rule for f in res.findings if f.severity == "error")
            summary = ("contract check on the dataset: PASS" if not rules else
                       f"contract check on the dataset: {sum(rules.values())} finding(s) no inferred rule can "
                       f"accept ({', '.join(f'{r} x{k}' for r, k in rules.most_common(5))}): outliers under 1% of the "
                       "rows are left as findings (the comments say which), see `gate check`")
    if out is None:
        sys.stdout.write(text)
    else:
        from gate.io.atomic import atomic_write_text

        try:
            atomic_write_text(out, text)
            os.chmod(out, 0o644)
        except OSError as exc:
            raise GateError(f"cannot write the contract ({exc.strerror})", file=out) from None
        print(f"wrote {out}: {len(contract.get('fields', {}))} field(s), "
              f"group_key {contract.get('group_key', 'none')}", file=sys.stderr)
    if summary:
        print(summary, file=sys.stderr)
    return int(ExitCode.PASS)


def run_contract_lint(*, path: str, quiet: bool) -> int:
    """Loads the contract (a bad one is its one-line error, exit 1) and lists what each check will use."""
    from gate.contract.lint import lint
    from gate.pii.redact import mask_ident

    _, lines = lint(path)
    lines = [mask_ident(line, numbers=False) for line in lines]  # field names from the contract: one line each
    print(lines[0] if quiet else "\n".join(lines))
    return int(ExitCode.PASS)
