"""`gate contract lint FILE`: validate a contract without data and say what each check will use.

A contract is read by eleven checks, each taking its own part of it; a user editing one wants to know, before
a long run, that the file loads and which rules, options (with their defaults) and thresholds each check will
apply, and which checks will be skipped for lack of a key (no tokenizer, no group_key, no evaluation sets).
"""

from __future__ import annotations

from pathlib import Path

from gate.contract.model import Contract, load_contract


def _opts(contract: Contract, check: str) -> str:
    from gate.schema.docs import _check_defaults

    merged = {**_check_defaults().get(check, {}), **contract.options(check)}
    set_here = set(contract.options(check))
    if not merged:
        return ""
    return "options " + ", ".join(f"{k}={v}{'' if k in set_here else ' (default)'}" for k, v in merged.items())


def uses(contract: Contract) -> dict[str, tuple[str, list[str]]]:
    """check name -> (status: runs | skipped, what it reads from the contract); whether it runs is
    `gate.data.registry.plan`'s answer, the one the runner gives."""
    from gate.data.registry import plan

    c = contract
    out: dict[str, tuple[str, list[str]]] = {}
    rules = [f"{len(c.fields)} field(s)" + (f" ({', '.join(f.name for f in c.fields)})" if c.fields else ""),
             f"roles {list(c.roles)}, system_prompt {c.system_prompt}, final_role {c.final_role}",
             f"output {c.output_format}" + (" with a JSON Schema" if c.output_schema is not None else "")]
    if c.tools:
        rules.append(f"{len(c.tools)} tool(s): {', '.join(t.name for t in c.tools)}")
    if c.refusal:
        rules.append(f"{len(c.refusal['when_user_matches'])} refusal pattern(s)")
    if c.sources is not None:
        rules.append(f"sources {list(c.sources)}")
    if c.languages is not None:
        rules.append(f"languages {list(c.languages)}")
    out["contract"] = ("runs", rules)
    text = [f"text roles {list(c.text_roles)}" + (" + tool calls" if c.include_tool_calls else "")]
    out["exact_duplicate"] = ("runs", [*text, f"max_duplicate_rate {c.max_duplicate_rate}"])
    out["near_duplicate"] = ("runs", [*text, _opts(c, "near_duplicate")])
    out["leakage"] = ("runs", [*text, "near_duplicate's options, across splits"])
    for name in ("pii", "secret"):
        out[name] = ("runs", [_opts(c, name) or "options: all defaults"])
    sets = list(c.evaluation_sets)
    missing = [s for s in sets if not Path(s).exists()]
    out["contamination"] = ("runs", [f"{len(sets)} evaluation set(s) + the test split"
                                     + (f"; NOT FOUND: {', '.join(missing)}" if missing else ""),
                                     _opts(c, "contamination")])
    out["group_split"] = ("runs", [f"group_key {c.group_key}"
                                   + (f", fallback {c.group_fallback_key}" if c.group_fallback_key else "")
                                   + (f", window {c.group_window}" if c.group_window else "")])
    out["template"] = ("runs", [f"tokenizer {c.tokenizer.path}" if c.tokenizer else "", _opts(c, "template")])
    out["length"] = ("runs", [f"limits {dict(c.limits) or 'none'}"
                              + (" + token lengths" if c.tokenizer else ""), _opts(c, "length")])
    out["boilerplate"] = ("runs", [_opts(c, "boilerplate")])
    planned = plan(c)
    for name in planned:  # a check without its own line above: its options
        out.setdefault(name, ("runs", [_opts(c, name) or "options: all defaults"]))
    return {k: ("runs", [u for u in out[k][1] if u]) if planned[k] is None else ("skipped", [str(planned[k])])
            for k in planned}


def _check_files(contract: Contract, path: Path) -> None:
    """The files the checks will read exist and read as what they must be: a missing evaluation set, one that is
    not a JSONL suite (a scorecard YAML) or has a bad line, or a missing local tokenizer directory fails
    `gate check` with exit 1, so lint fails with it, in one line at the contract's line naming the file."""
    from gate import yamlio
    from gate.data.evalsets import load_eval_items
    from gate.errors import ContractError, GateError

    def fail(message: str, at: list[object]) -> GateError:
        return yamlio.read(path, what="contract", error=ContractError).fail(message, at)

    for i, s in enumerate(contract.evaluation_sets):
        if not Path(s).is_file():
            raise fail(f"evaluation set not found: {s}", ["evaluation_sets", i])
        try:
            load_eval_items((s,), str(path))
        except GateError as exc:
            raise fail(f"evaluation set {exc}", ["evaluation_sets", i]) from None
    tok = contract.tokenizer
    # a path the contract names as a file (absolute, ./, ../: gate.contract.model._tokenizer resolved it); an id
    # of the local Hugging Face cache is looked up by the template check
    if tok is not None and Path(tok.path).is_absolute() and not Path(tok.path).exists():
        raise fail(f"tokenizer not found: {tok.path}", ["tokenizer", "path"])


def lint(path: str | Path) -> tuple[Contract, list[str]]:
    """(the loaded contract, the lines of the report); a bad contract raises its one-line ContractError."""
    contract = load_contract(path)
    _check_files(contract, Path(path))
    lines = [f"OK {path}: contract {contract.name} {contract.version} (sha256 {contract.sha256[:12]})"]
    for name, (status, used) in uses(contract).items():
        limit = contract.threshold(name)
        lines.append(f"  {name:<16} {status:<8} max_findings {limit}; " + "; ".join(used))
    return contract, lines
