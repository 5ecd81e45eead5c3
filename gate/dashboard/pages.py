"""The dashboard's pages as HTML strings: queries -> charts -> jinja2 templates.

Why pages render to plain strings with no web framework in sight: the live dashboard (gate/dashboard/routes.py)
and the static release report (gate/dashboard/static.py) are the same pages, so neither may depend on a request.
Everything quoted from a dataset goes through the report redactor once more on the way out: the checks store
redacted snippets already, but the page must not become the leak if one ever did not.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from gate.dashboard import charts, queries
from gate.errors import GateError
from gate.store import evidence, views

PIN_FIELDS = ["base_model", "base_revision", "adapter", "adapter_sha256", "tokenizer_sha256", "chat_template_sha256",
              "engine", "engine_version", "engine_flags", "system_prompt_sha256", "tool_schema_sha256", "scorecard",
              "scorecard_version", "scorecard_sha256", "suite_hashes", "dataset_fingerprints", "training_run",
              "created_by", "notes"]


@lru_cache(maxsize=1)
def _env() -> Any:
    import jinja2

    return jinja2.Environment(loader=jinja2.PackageLoader("gate.dashboard", "templates"),
                              autoescape=jinja2.select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)


@contextmanager
def _record(db: str) -> Iterator[Any]:
    """A read-only connection whose errors name the database file."""
    try:
        with queries.read_only(db) as con:
            yield con
    except GateError as exc:
        if exc.file is None:
            exc.file = db
        raise


def _render(template: str, **ctx: Any) -> str:
    ctx.setdefault("base", "")
    ctx.setdefault("plotly_src", "/static/plotly.min.js")
    ctx.setdefault("links", True)
    ctx.setdefault("logout", False)
    return _env().get_template(template).render(**ctx)


def _show(v: Any) -> str:
    import json

    if v is None:
        return "–"
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True)
    return str(v)


def model_label(location: str | None) -> str | None:
    """A model as a reader names it: a Hugging Face cache path (`.../models--Org--Name/snapshots/<sha>`, what
    `gate release` records when the weights were read from the cache) is shown as `Org/Name @ <sha, 12>`; anything
    else as recorded. Why: the cache path hid which model a release was built on behind 90 characters."""
    import re

    if not location:
        return location
    m = re.search(r"models--([^/\\]+?)--([^/\\]+)[/\\]snapshots[/\\]([0-9a-f]{7,})", location)
    return f"{m.group(1)}/{m.group(2)} @ {m.group(3)[:12]}" if m else location


def _pin(key: str, value: Any) -> str:
    shown = _show(value)
    if key == "base_model" and isinstance(value, str) and model_label(value) != value:
        return f"{model_label(value)} ({value})"
    return shown


def home(db: str, *, scorecard: str | None = None, verdict: str | None = None, limit: int = 200,
         per_scorecard: int = 200, **ctx: Any) -> str:
    """Releases over time (one chart per scorecard), the newest releases, filters and the diff form."""
    with _record(db) as con:
        series = views.release_series(con, per_scorecard=per_scorecard, scorecard=scorecard)
        rows = views.release_list(con, scorecard=scorecard, verdict=verdict, limit=limit)
        status = evidence.release_data_check_status(con, rows)
        facets = views.facets(con)
        current = views.current_release(con)
    for r in rows:
        r["data_check_status"] = status.get(r["release_id"], "none")
        r["base_model_label"] = model_label(r.get("base_model"))
    return _render("home.html", title="Releases", charts=charts.release_history(series), releases=rows,
                   facets=facets, sel_scorecard=scorecard or "", sel_verdict=verdict or "", current=current, **ctx)


def _release_context(con: Any, release_id: str, *, history_upto: bool = False) -> dict[str, Any]:
    rel = views.release(con, release_id)
    # a report is frozen at its release: later releases are not part of its story
    series = views.release_series(con, per_scorecard=200, scorecard=rel["scorecard"],
                                    upto=rel["created_at"] if history_upto else None)
    hist = charts.release_history(series).get(rel["scorecard"])
    from gate.store.corrections import corrections_in

    # what the release's training data owes to reviewed corrections (`gate apply`), by the rule each cited
    corrections = corrections_in(con, list(rel.get("dataset_fingerprints") or []))
    return {"rel": rel, "pins": [(k, _pin(k, rel.get(k))) for k in PIN_FIELDS], "history_chart": hist,
            "category_chart": charts.category_breakdown(rel["comparisons"]), "corrections": corrections}


def release(db: str, release_id: str, **ctx: Any) -> str:
    """One release: gate verdicts, per-category breakdown, data checks behind it, pinned artifacts."""
    with _record(db) as con:
        if con is None:
            raise GateError(f"no release '{release_id}' in the record", file=db)
        page = _release_context(con, release_id)
    return _render("release.html", title=f"Release {release_id}", **page, **ctx)


def report(db: str, release_id: str, **ctx: Any) -> str:
    """The release page frozen for a static report (no links into a live dashboard)."""
    with _record(db) as con:
        if con is None:
            raise GateError(f"no release '{release_id}' in the record", file=db)
        page = _release_context(con, release_id, history_upto=True)
    ctx.setdefault("links", False)
    return _render("release.html", title=f"Release {release_id}", subtitle="static release report", **page, **ctx)


def _quoted(text: Any, width: int = 2000) -> Any:
    """A prompt, an answer or an explanation as the page may show it: through the project's one value masker."""
    from gate.pii.redact import value_snippet as snippet

    return snippet(str(text), width) if text else text


def _items_context(con: Any, release_id: str, prompts: dict[tuple[str, str], str] | None) -> dict[str, Any]:
    rel = views.release(con, release_id)
    items = evidence.item_answers(con, rel["decision_id"]) if rel.get("decision_id") else []
    for it in items:
        # the scorecard's text when given (static report), else the masked prompt the record holds
        it["prompt"] = _quoted((prompts or {}).get((it["suite"], it["item_id"])) or it.get("prompt_masked"))
        for side in ("baseline", "candidate"):
            it[side] = _quoted(it[side])
            it[f"{side}_error"] = _quoted(it[f"{side}_error"], 300)
        for sc in it["scores"].values():
            for side in ("baseline", "candidate"):
                sc[f"{side}_explanation"] = _quoted(sc[f"{side}_explanation"], 500)
    scorers = sorted({k for it in items for k in it["scores"]})
    return {"rel": rel, "items": items, "scorers": scorers, "changed": sum(it["changed"] for it in items),
            "with_prompts": prompts is not None or any(it.get("prompt_masked") for it in items)}


def items(db: str, release_id: str, *, prompts: dict[tuple[str, str], str] | None = None, **ctx: Any) -> str:
    """Per item of a release's decision: the prompt (when the scorecard is at hand), both answers and each
    scorer's verdict and explanation side by side, filterable in the page to the items whose verdict changed."""
    with _record(db) as con:
        if con is None:
            raise GateError(f"no release '{release_id}' in the record", file=db)
        page = _items_context(con, release_id, prompts)
    return _render("items.html", title=f"Items of {release_id}", **page, **ctx)


def scorecard_prompts(path: str) -> dict[tuple[str, str], str]:
    """(suite, item id) -> the item's last user message, from a scorecard file: records written before samples held
    `prompt_masked` keep only each prompt's hash, so the static report can read the prompts from the scorecard the
    decision was made with (the same `prompt_text` the record's column is made from)."""
    from gate.score.run import prompt_text
    from gate.score.scorecard import load_scorecard

    sc = load_scorecard(path)
    return {(suite.name, it.id): prompt_text(it.messages) for suite in sc.suites for it in suite.items}


def _diff_metrics(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows for the metrics both releases compared (category 'all'), aligned by suite, scorer and key."""
    def index(rel: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {f"{c['suite']} · {c['scorer']}.{c['key']}": c for c in rel["comparisons"] if c["category"] == "all"}

    ia, ib = index(a), index(b)
    out = []
    for name in sorted(ia.keys() | ib.keys()):
        ca, cb = ia.get(name, {}), ib.get(name, {})
        row: dict[str, Any] = {"metric": name}
        for side, c in (("a", ca), ("b", cb)):
            for k in ("candidate", "delta", "ci_low", "ci_high"):
                row[f"{side}_{k}"] = c.get(k)
        row["change"] = (cb["candidate"] - ca["candidate"]) if ca.get("candidate") is not None and \
            cb.get("candidate") is not None else None
        out.append(row)
    return out


def _diff_gates(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    ga, gb = {g["gate"]: g for g in a["gates"]}, {g["gate"]: g for g in b["gates"]}
    names = list(ga) + [n for n in gb if n not in ga]
    return [{"gate": n, "a_observed": ga.get(n, {}).get("observed"), "a_verdict": ga.get(n, {}).get("verdict"),
             "b_observed": gb.get(n, {}).get("observed"), "b_verdict": gb.get(n, {}).get("verdict")} for n in names]


def diff(db: str, a_id: str, b_id: str, **ctx: Any) -> str:
    """Two releases side by side: what each pinned, how each metric moved, how each gate went."""
    with _record(db) as con:
        if con is None:
            raise GateError(f"no release '{a_id}' in the record", file=db)
        a, b = views.release(con, a_id), views.release(con, b_id)
    pins = [(k, _pin(k, a.get(k)), _pin(k, b.get(k))) for k in ["verdict", "created_at", *PIN_FIELDS]]
    metrics = _diff_metrics(a, b)
    return _render("diff.html", title=f"{a_id} vs {b_id}", a=a, b=b, pins=pins, metrics=metrics,
                   gates=_diff_gates(a, b), diff_chart=charts.release_diff(a_id, b_id, metrics), **ctx)


def checks(db: str, **ctx: Any) -> str:
    with _record(db) as con:
        runs = views.check_runs(con)
    return _render("checks.html", title="Dataset checks", runs=runs, **ctx)


def corrections(db: str, **ctx: Any) -> str:
    """Reviewed corrections by rule (`gate apply`), so evaluators read the rules the data was corrected by."""
    from gate.store.corrections import corrections_view

    with _record(db) as con:
        view = corrections_view(con)
    return _render("corrections.html", title="Corrections", **view, **ctx)


def reviews(db: str, **ctx: Any) -> str:
    """The hard-case queues (`gate review`), newest first, so a reviewer opens the one to work through."""
    from gate.store.review import reviews_view

    with _record(db) as con:
        queues = reviews_view(con)
    for q in queues:
        q["dataset"] = _mask_text(q["dataset"] or "", None)
    return _render("reviews.html", title="Review queues", queues=queues, **ctx)


def review(db: str, review_id: str, **ctx: Any) -> str:
    """One queue, first to read first: every quoted text masked again on the way out (the record holds masked
    snippets already; the page must not become the leak if one ever did not)."""
    from gate.store.review import review_cases

    with _record(db) as con:
        cases = review_cases(con, review_id)
    if cases is None:
        raise GateError(f"no review queue '{review_id}' in the record", file=db)
    for c in cases:
        for key in ("prompt", "gold", "answer"):
            c[key] = _quoted(c[key])
        c["detail"] = _mask_text(c["detail"] or "", None)
        for key in ("dataset", "split", "row_id", "partner_id"):
            if isinstance(c.get(key), str):
                c[key] = _mask_text(c[key], None)
    return _render("review.html", title=f"Review queue {review_id}", review_id=review_id, cases=cases, **ctx)


def _identifiers(run: dict[str, Any]) -> Any:
    """A pattern of gate's own names in a run (its checks, rules, and rules without their check's prefix): they
    are no personal data, and the loose masker took "base64_high_entropy_string" for a token ("base*** 6")."""
    import re

    names = {r["name"] for r in run["results"] if r.get("name")} | set(run["facets"].get("check", []))
    for rule in run["facets"].get("rule", []):
        names |= {rule, rule.split(".", 1)[-1]}
    names = {n for n in names if n}
    if not names:
        return None
    alts = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w.])(?:{alts})(?![\w])")


def _mask_text(text: str, keep: Any) -> str:
    """A message or summary masked again on the way out (`mask_loose`), gate's own check and rule names kept."""
    from gate.pii.redact import mask_loose

    if keep is None:
        return mask_loose(text)
    out, pos = [], 0
    for m in keep.finditer(text):
        out += [mask_loose(text[pos:m.start()]), m.group(0)]
        pos = m.end()
    out.append(mask_loose(text[pos:]))
    return "".join(out)


PAGE_SIZE = 200  # findings per page of the live check-run page


def _check_run_context(db: str, run_id: str, filters: dict[str, str | None], *, offset: int = 0,
                       per_check: int | None = None) -> dict[str, Any]:
    """The run, one page of its findings (or each check's first `per_check`), the count per check, and its
    clusters (every quoted value masked again on the way out) and its length chart."""
    from gate.pii.redact import mask_loose as mask

    offset = max(0, offset)
    with _record(db) as con:
        if con is None:
            raise GateError(f"no check run '{run_id}' in the record", file=db)
        run = views.check_run(con, run_id, **filters, limit=PAGE_SIZE, offset=offset, per_check=per_check)
        details = evidence.check_run_details(con, run_id)
        clusters = evidence.duplicate_clusters(con, run_id)
    keep = _identifiers(run)
    for f in run["findings"]:
        f["snippet"] = mask(f["snippet"]) if f.get("snippet") else f.get("snippet")
        f["message"] = _mask_text(f["message"], keep) if f.get("message") else f.get("message")
    for r in run["results"]:
        r["summary"] = _mask_text(r["summary"], keep) if r.get("summary") else r.get("summary")
    for c in clusters:
        for m in c["members"]:
            m["snippet"] = mask(m["snippet"]) if m.get("snippet") else m.get("snippet")
    # checks that recorded findings but no result row (none today) still get their count shown
    named = {r["name"] for r in run["results"]}
    extra = [{"name": c, "status": None, "counts": None, "seconds": None, "summary": None}
             for c in run["finding_counts"] if c not in named]
    run["results"] = run["results"] + extra
    capped = {c: n for c, n in run["finding_counts"].items() if per_check is not None and n > per_check}
    length = details.get("length") or {}
    active = {k: v or "" for k, v in filters.items()}

    def query(**over: Any) -> str:
        """This page's URL query with some parameters changed (empty ones left out)."""
        from urllib.parse import urlencode

        return "?" + urlencode({k: v for k, v in {**active, "offset": offset, **over}.items() if v})

    return {"run": run, "filters": active, "check": active.get("check", ""), "offset": offset, "query": query,
            "page_size": PAGE_SIZE, "per_check": per_check, "capped": capped, "clusters": clusters,
            "length_chart": charts.length_chart(length) if length else None, "length_splits": length.get("splits")}


def check_run(db: str, run_id: str, *, check: str | None = None, rule: str | None = None, split: str | None = None,
              severity: str | None = None, offset: int = 0, **ctx: Any) -> str:
    """One dataset check and a page of its findings, filtered server-side, every quoted value masked again."""
    filters = {"check": check, "rule": rule, "split": split, "severity": severity}
    page = _check_run_context(db, run_id, filters, offset=offset)
    return _render("check_run.html", title=f"Check {run_id}", **page, **ctx)


def check_report(db: str, run_id: str, **ctx: Any) -> str:
    """The check-run page frozen as one static page (`gate report-html --check-run`): every check's count and its
    first `max_html_findings` findings (so no check is hidden and the file stays bounded), no links into a live
    dashboard, filters and paging client-side."""
    from gate.io.limits import current

    filters: dict[str, str | None] = {"check": None, "rule": None, "split": None, "severity": None}
    page = _check_run_context(db, run_id, filters, per_check=current().max_html_findings)
    ctx.setdefault("links", False)
    return _render("check_run.html", title=f"Check {run_id}", subtitle="static check report", static=True, **page,
                   **ctx)
