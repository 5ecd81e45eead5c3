"""What each key of a contract means: the annotations the published schema and docs/contracts.md carry.

Kept beside the schema export rather than in the meta-schemas so the validating schemas stay small; a test fails
when a contract key (or a check option) has no entry here, so a new key cannot ship undocumented. Paths are
dotted; `<name>` stands for a key the user chooses (a field name), `[]` for a list item. Defaults are the values
the loader (gate/contract/model.py) or the check uses when the key is absent.
"""

from __future__ import annotations

from typing import Any

_ROLES = "which messages are read: any of system, developer, user, assistant, tool"

CONTRACT: dict[str, dict[str, Any]] = {
    "": {"description": "A data contract: what every row of a training set must be. `gate check` enforces it."},
    "name": {"description": "Contract name, recorded with every check run.", "examples": ["sql-assistant"]},
    "version": {"description": "Your version of the contract (string or number); recorded with every run.",
                "examples": ["1.0"]},
    "description": {"description": "Free text for people."},
    "fields": {"description": "Row-level metadata columns (beside `messages`), by column name.",
               "examples": [{"id": {"type": "string", "required": True, "unique": True}}]},
    "fields.<name>": {"description": "One column's rules. Write the mapping form: `dialect: {type: string}`."},
    "fields.<name>.type": {"description": "Value type; datetime is an ISO 8601 string.", "examples": ["string"]},
    "fields.<name>.required": {"description": "Every row has a non-null value.", "default": False},
    "fields.<name>.unique": {"description": "No two rows share a value.", "default": False},
    "fields.<name>.pattern": {"description": "Regular expression (RE2 syntax, matched in linear time) the value "
                                             "must contain; anchor it (^...$) to match the whole value.",
                              "examples": ["^tri-[0-9]{6}$"]},
    "fields.<name>.allowed": {"description": "The only values allowed (what other tools call `enum`).",
                              "examples": [["postgres", "sqlite"]]},
    "fields.<name>.min_length": {"description": "Shortest string value, in characters."},
    "fields.<name>.max_length": {"description": "Longest string value, in characters."},
    "fields.<name>.max_null_rate": {"description": "Share of rows that may lack the value (0 to 1)."},
    "fields.<name>.description": {"description": "Free text for people."},
    "allow_extra_fields": {"description": "Columns not declared under `fields` are allowed.", "default": True},
    "sources": {"description": "The allowed values of the `source` field (needs a declared `source` field).",
                "examples": [["email", "chat"]]},
    "languages": {"description": "Languages the text may be in (ISO 639-1 codes).", "examples": [["en"]]},
    "splits": {"description": "Which known split (train, val, test, ...) a data file whose name is none of them is: "
                          "file-name globs per split, matched against the name without its extension "
                          "(`train_more` of train_more.ndjson). A file no rule maps is refused (see Splits below); "
                          "a mapped file keeps its own name in reports, is read by contamination as the split it "
                          "maps to, and its copies of rows in the original split are its findings.",
               "examples": [{"train": ["train*"], "test": ["heldout*"]}]},
    "messages": {"description": "The chat: which roles, how many messages, how it ends."},
    "messages.roles": {"description": "Roles a message may have.",
                       "default": ["system", "user", "assistant", "tool"]},
    "messages.system_prompt": {"description": "Whether the first message is a system prompt.",
                               "default": "optional"},
    "messages.min_messages": {"description": "Fewest messages in a row.", "default": 1},
    "messages.max_messages": {"description": "Most messages in a row (no limit when absent)."},
    "messages.final_role": {"description": "Role of the last message.", "default": "assistant"},
    "messages.allow_empty_assistant": {"description": "An assistant message may be empty.", "default": False},
    "output": {"description": "What the assistant's answer must be."},
    "output.format": {"description": "json: the answer parses as JSON; text: free text.",
                      "default": "text (json when a schema is given)"},
    "output.applies_to": {"description": "Which assistant messages the rules apply to.",
                          "default": "final_assistant"},
    "output.schema": {"description": "JSON Schema (draft 2020-12) the parsed answer must satisfy; no remote $ref.",
                      "examples": [{"type": "object", "required": ["sql"]}]},
    "tools": {"description": "The tool catalogue the assistant may call."},
    "tools.catalogue": {"description": "The tools, as OpenAI-style function definitions."},
    "tools.catalogue[].name": {"description": "Tool (function) name.", "examples": ["lookup_order"]},
    "tools.catalogue[].description": {"description": "What the tool does."},
    "tools.catalogue[].parameters": {"description": "JSON Schema of the arguments."},
    "tools.on_missing_required": {"description": "ask_user: a call missing a required argument must be a "
                                                 "question instead; allow: not checked.", "default": "ask_user"},
    "tools.require_row_tools": {"description": "Every row carries its own `tools` list.", "default": False},
    "refusal": {"description": "Requests the assistant must refuse, and what the refusal looks like."},
    "refusal.description": {"description": "Free text for people."},
    "refusal.when_user_matches": {"description": "Regular expressions on the user turn that make a refusal due.",
                                  "examples": [["(?i)\\bbypass (the )?verification\\b"]]},
    "refusal.expect_output": {"description": "Keys the JSON answer must have when refusing.",
                              "examples": [{"next_action": "refuse"}]},
    "refusal.expect_text_matches": {"description": "Regular expression a text refusal must match."},
    "refusal.forbid_tool_calls": {"description": "A refusal calls no tool."},
    "missing_information": {"description": "When the user leaves out something the answer needs."},
    "missing_information.description": {"description": "Free text for people."},
    "missing_information.placeholder": {"description": "The value the answer uses for what is missing.",
                                        "examples": ["unknown"]},
    "missing_information.fields": {"description": "Answer keys that may hold the placeholder."},
    "missing_information.expect_output": {"description": "Keys the answer must have when something is missing."},
    "group_key": {"description": "Field that groups rows that must stay in one split (customer, conversation); "
                                 "read by `group_split` and `gate split`.", "examples": ["customer"]},
    "group_fallback_key": {"description": "Field used when a row has no group key."},
    "group_window": {"description": "Time bucket added to the group key (needs a datetime group key)."},
    "text": {"description": "Which text the duplicate, leakage and contamination checks compare."},
    "text.roles": {"description": _ROLES + ".", "default": ["user", "assistant"]},
    "text.include_tool_calls": {"description": "Tool calls count as text.", "default": True},
    "limits": {"description": "Character and token limits (the `length` check)."},
    "limits.max_row_chars": {"description": "Most characters in one row (all messages)."},
    "limits.max_message_chars": {"description": "Most characters in one message."},
    "limits.max_tokens": {"description": "Most tokens in one rendered row (needs `tokenizer`)."},
    "thresholds": {"description": "How much of each problem is tolerated before a check fails."},
    "thresholds.max_duplicate_rate": {"description": "Share of exact-duplicate rows tolerated (0 to 1).",
                                      "default": 0.0},
    "thresholds.max_findings": {"description": "Error findings tolerated per check, by check name.",
                                "default": {}, "examples": [{"contract": 0, "pii": 2}]},
    "thresholds.max_findings.<name>": {"description": "Error findings this check may have and still pass.",
                                       "default": 0},
    "checks": {"description": "Per-check options, by check name; each check reads only its own section."},
    "tokenizer": {"description": "The model tokenizer (and chat template) the data is trained with; local "
                                 "directory or an id in the local Hugging Face cache, never downloaded."},
    "tokenizer.path": {"description": "Tokenizer directory (relative to the contract) or cache id.",
                       "examples": ["../models/tokenizer"]},
    "tokenizer.revision": {"description": "Pinned snapshot of a cached id."},
    "rules": {"description": "The labelling rules reviewers cite when they correct a row: rule id -> what it says. A "
                             "correction (`gate apply`) gives its reason as free text or as `rule:<id>` of this list, "
                             "so evaluators read the same rule.",
              "examples": [{"outage-escalates": "A service that is down for everyone is escalated to engineering."}]},
    "evaluation_sets": {"description": "Evaluation files (relative to the contract) training rows must not "
                                       "contain (the `contamination` check).",
                        "examples": [["../scorecards/suites/heldout.jsonl"]]},
    "scrub": {"description": "What `gate scrub` does with each finding. Scrub drops exactly the rows `gate check` "
                             "flags with a drop action, decided on the original text (duplicates, leaked copies, "
                             "empty turns `messages.empty`, rules set to `drop_row`), and rewrites PII and secret "
                             "values; a row without a finding is copied unchanged. What scrub keeps, `check` does not "
                             "fail on."},
    "scrub.operators": {"description": "Operator per PII entity type (`PERSON`, `URL`), secret kind, or finding rule "
                                       "(`pii.URL`, `messages.empty`, `contract.refusal`, a check name). `replace`: a "
                                       "type tag (`<PERSON>`); `pseudonym`: a numbered tag per distinct value of the "
                                       "row (`<PERSON_1>`, `<PERSON_2>`); `hash`: a salted sha256; `drop_row`: drop "
                                       "the row; `keep`: leave it, and the `pii`/`secret` checks do not report it. "
                                       "One value gets one replacement in every turn of a row.",
                        "examples": [{"EMAIL_ADDRESS": "replace", "PERSON": "pseudonym", "URL": "keep",
                                      "messages.empty": "drop_row"}]},
    "scrub.default_operator": {"description": "Operator for every other PII entity and secret.", "default": "replace"},
    "scrub.salt_env": {"description": "Environment variable holding the salt of the `hash` operator."},
    "scrub.drop_duplicates": {"description": "Drop the rows the duplicate checks flag (the check's kept row "
                                             "stays).", "default": True},
    "scrub.drop_leakage": {"description": "Drop the rows the `leakage` check flags (training copies of evaluation "
                                          "rows).", "default": True},
}

#: one line per check (docs/contracts.md and the `check --help` list)
CHECKS: dict[str, str] = {
    "contract": "every row against the contract: fields, messages, output schema, tools, refusal rules",
    "exact_duplicate": "identical rows (after normalisation of the `text:` section)",
    "near_duplicate": "near-identical rows (MinHash, datasketch-compatible)",
    "conflicting_answers": "rows with the same or near-same prompt whose answers disagree (label noise)",
    "semantic_duplicate": "rows of one split that say the same thing in other words (all-MiniLM-L6-v2 cosine)",
    "pii": "personal data (presidio-analyzer; names and places with the spaCy model)",
    "secret": "keys, tokens and passwords (detect-secrets plus gate's own patterns)",
    "leakage": "training rows near-identical to validation or test rows",
    "contamination": "training rows containing evaluation items (n-gram overlap)",
    "group_split": "one group (group_key) in more than one split",
    "template": "rows render with the tokenizer's chat template and the loss mask covers the answers",
    "length": "character and token lengths against `limits:`",
    "boilerplate": "the same long line or sentence repeated across many rows",
}

def _check_defaults() -> dict[str, dict[str, Any]]:
    """The defaults `gate contract lint` shows beside the options a contract sets: near_duplicate's from its options
    schema (each option's `default` annotation, as docs/contracts.md shows it), boilerplate's and contamination's
    from the tables their code reads."""
    from gate.data.checks.boilerplate import DEFAULTS
    from gate.data.checks.contamination import OPTIONS
    from gate.data.checks.near_duplicate import NearDuplicateCheck

    near = {k: v["default"] for k, v in NearDuplicateCheck.options_schema["properties"].items()}
    return {"near_duplicate": near, "boilerplate": dict(DEFAULTS), "contamination": dict(OPTIONS)}


def default_skips() -> dict[str, str]:
    """check -> why it is skipped under a contract that does not mention it, from `gate.data.registry.plan` (the
    function the runner and `gate contract lint` use), so the reference says what a run does."""
    from types import MappingProxyType

    from gate.contract.model import Contract
    from gate.data.registry import plan

    bare = Contract(path="", name="", version="", sha256="", raw=MappingProxyType({}))
    return {name: reason for name, reason in plan(bare).items() if reason}


def skip_note(name: str, skips: dict[str, str]) -> str:
    return f" Skipped unless the contract says otherwise: {skips[name]}." if name in skips else ""


def contract_docs() -> dict[str, dict[str, Any]]:
    """The contract table plus each check's section and its options' defaults."""
    out = dict(CONTRACT)
    defaults = _check_defaults()
    skips = default_skips()
    for name, line in CHECKS.items():
        out[f"checks.{name}"] = {"description": f"Options of the `{name}` check: {line}.{skip_note(name, skips)}"}
        for opt, value in defaults.get(name, {}).items():
            out[f"checks.{name}.{opt}"] = {"default": value}
    return out
