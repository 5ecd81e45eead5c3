"""Moving the "current" pointer: promote (only a PROMOTE decision over clean data) and rollback (with a reason).

The pointer is an append-only history, never an updated cell: who moved it, when, from where and why stays in the
record, and "current" is simply its last row. A refused promote writes nothing at all.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gate.errors import GateError


def promotion_blockers(release: dict[str, Any], db: str | None) -> list[str]:
    """Everything that forbids promoting this release, re-read from the record at promote time."""
    from gate.release.record import check_runs
    from gate.store.db import connect
    from gate.store.releases import get_decision

    reasons = []
    decision = get_decision(release["decision_id"], db)
    if decision["verdict"] != "PROMOTE":
        reasons.append(f"its decision {decision['decision_id']} is {decision['verdict']}: {decision['summary']}")
    recorded = release.get("data_checks") or []
    if not recorded:
        reasons.append("no `gate check` run is recorded behind its training data (release create --data-check)")
    else:
        with connect(db, read_only=True) as con:
            for c in check_runs(con, [c["run_id"] for c in recorded]):
                if c["verdict"] != "pass":
                    reasons.append(f"data check {c['run_id']} on {c['dataset']} is '{c['verdict']}', not 'pass'")
    return reasons


def promoted_stack(history: list[dict[str, Any]]) -> list[str]:
    """Releases in promotion order as the history leaves them: promote pushes, rollback pops back to its target."""
    stack: list[str] = []
    for h in history:
        if h["action"] == "promote":
            stack.append(h["release_id"])
        elif h["action"] == "rollback":
            while stack and stack[-1] != h["release_id"]:
                stack.pop()
    return stack


def promote(release_id: str, *, by: str, db: str | None) -> tuple[str, list[str]]:
    """('promoted' | 'already-current' | 'refused', reasons). Writes one pointer row only when promoted."""
    from gate.store.releases import current_release, get_release, record_pointer

    release = get_release(release_id, db)
    reasons = promotion_blockers(release, db)
    if reasons:
        return "refused", reasons
    current = current_release(db)
    if current == release_id:
        return "already-current", []
    record_pointer({"moved_at": datetime.now(UTC), "action": "promote", "release_id": release_id,
                    "previous_release_id": current, "moved_by": by, "reason": None}, db)
    return "promoted", []


def rollback(release_id: str | None, *, reason: str, by: str, db: str | None,
             only_from: str | None = None) -> tuple[str, str]:
    """Points "current" back to `release_id`, or to the release promoted before the current one. (from, to).

    `only_from`: move only if that release is current now (a watcher judged metrics about it; if someone promoted
    another release meanwhile, rolling that one back would undo a release nobody measured)."""
    from gate.store.releases import get_release, pointer_history, record_pointer

    if not reason.strip():
        raise GateError("a rollback needs --reason (it is recorded with the move)", field="--reason")
    stack = promoted_stack(pointer_history(db))
    if not stack:
        raise GateError("nothing is current yet: there is nothing to roll back")
    current = stack[-1]
    if only_from is not None and only_from != current:
        raise GateError(f"'{only_from}' is no longer current (current is '{current}'): nothing rolled back")
    if release_id is None:
        if len(stack) < 2:
            raise GateError(f"'{current}' is the first promoted release: there is no previous one to go back to")
        target = stack[-2]
    else:
        get_release(release_id, db)
        if release_id == current:
            raise GateError(f"'{release_id}' is already current")
        if release_id not in stack[:-1]:
            raise GateError(f"'{release_id}' was never promoted before the current release: roll back only to a "
                            "release that was current before (promote it instead)")
        target = release_id
    record_pointer({"moved_at": datetime.now(UTC), "action": "rollback", "release_id": target,
                    "previous_release_id": current, "moved_by": by, "reason": reason.strip()}, db)
    return current, target
