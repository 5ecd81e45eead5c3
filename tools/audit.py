#!/usr/bin/env python3
"""Reads pip-audit's JSON result for requirements.lock and audits what pip-audit had to skip another way.

Why: pip-audit's PyPI service asks `/pypi/<name>/<version>/json` and its OSV service asks api.osv.dev. Where
neither answers (a registry proxy that serves only `/pypi/<name>/json`, no route to osv.dev), pip-audit skips
every package and still prints "No known vulnerabilities found". This tool never lets that pass as clean:

1. every vulnerability pip-audit did report fails the audit;
2. for each skipped package it reads `/pypi/<name>/json`, whose `vulnerabilities` list is PyPI's answer for the
   project's latest release: authoritative when the pin *is* the latest release; when the pin is older, any
   listed advisory not fixed at or before the pin counts against it, and the package is reported as
   "behind latest" (an advisory fixed between the pin and the latest release is invisible there);
3. with `--osv-dir DIR` (a checkout of an OSV-format database such as github.com/pypa/advisory-database), the
   pinned versions are matched against its ranges too.

Exit 1 on any vulnerability or when pip-audit gave no result; 0 otherwise, with what could not be verified
listed. Usage: python tools/audit.py gate-report/pip-audit.json requirements.lock [--osv-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)", re.M)


def _v(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def latest_info(name: str, index: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{index}/pypi/{name}/json", timeout=60) as resp:
        data = json.load(resp)
    return {"latest": data["info"]["version"], "vulnerabilities": data.get("vulnerabilities") or []}


def affects(pinned: str, vuln: dict[str, Any]) -> bool:
    """A vulnerability listed for the latest release affects an older pin unless a fix is at or before it."""
    pin = _v(pinned.split("+")[0])
    fixes = [_v(f) for f in vuln.get("fixed_in") or []]
    return pin is None or not any(f is not None and f <= pin for f in fixes)


def osv_hits(osv_dir: Path, pins: dict[str, str]) -> list[tuple[str, str, str]]:
    """(package, version, advisory id) for every OSV entry whose ECOSYSTEM ranges or versions hold a pin."""
    import yaml

    hits = []
    for path in sorted(osv_dir.rglob("*.yaml")) + sorted(osv_dir.rglob("*.json")):
        try:
            doc = (yaml.safe_load if path.suffix == ".yaml" else json.loads)(path.read_text())
        except Exception:
            continue
        for aff in (doc or {}).get("affected") or []:
            name = canonicalize_name(aff.get("package", {}).get("name", ""))
            if name not in pins:
                continue
            raw = pins[name]
            pin = _v(raw.split("+")[0])
            hit = raw in (aff.get("versions") or []) or raw.split("+")[0] in (aff.get("versions") or [])
            for rng in aff.get("ranges") or []:
                if rng.get("type") != "ECOSYSTEM" or pin is None:
                    continue
                start = None
                for ev in rng.get("events") or []:
                    if "introduced" in ev:
                        start = Version("0") if ev["introduced"] == "0" else _v(ev["introduced"])
                    elif start is not None and ("fixed" in ev or "last_affected" in ev):
                        end = _v(ev.get("fixed") or ev["last_affected"])
                        if end is not None and start <= pin and (pin < end if "fixed" in ev else pin <= end):
                            hit = True
                        start = None
                if start is not None and start <= pin:
                    hit = True
            if hit:
                hits.append((name, raw, doc.get("id", path.stem)))
    return hits


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pip_audit_json", type=Path)
    ap.add_argument("lock", type=Path)
    ap.add_argument("--osv-dir", type=Path)
    ap.add_argument("--index", default="https://pypi.org")
    args = ap.parse_args()
    try:
        result = json.loads(args.pip_audit_json.read_text())
    except (OSError, ValueError) as exc:
        print(f"audit: pip-audit gave no result ({exc})", file=sys.stderr)
        return 1
    pins = {canonicalize_name(n): v for n, v in PIN.findall(args.lock.read_text())}
    found: list[str] = []
    skipped: list[str] = []
    for dep in result.get("dependencies", []):
        for vuln in dep.get("vulns") or []:
            found.append(f"{dep['name']} {dep.get('version')}: {vuln['id']} (fix: {vuln.get('fix_versions')})")
        if dep.get("skip_reason"):
            skipped.append(canonicalize_name(dep["name"]))
    print(f"pip-audit: {len(pins)} pinned, {len(skipped)} skipped, {len(found)} vulnerable")

    behind: list[str] = []
    unreachable: list[str] = []

    def one(name: str) -> tuple[str, dict[str, Any] | str]:
        try:
            return name, latest_info(name, args.index)
        except Exception as exc:  # reported; never fatal for the other packages
            return name, f"{type(exc).__name__}: {exc}"

    with ThreadPoolExecutor(8) as pool:
        for name, info in pool.map(one, [s for s in skipped if s in pins]):
            if isinstance(info, str):
                unreachable.append(f"{name}: {info}")
                continue
            for vuln in info["vulnerabilities"]:
                if not vuln.get("withdrawn") and affects(pins[name], vuln):
                    fix = vuln.get("fixed_in")
                    found.append(f"{name} {pins[name]}: {vuln['id']} {vuln.get('aliases')} (fix: {fix})")
            if info["latest"] != pins[name]:
                behind.append(f"{name} {pins[name]} (latest {info['latest']})")
    if args.osv_dir:
        found += [f"{n} {v}: {i} (OSV database {args.osv_dir})" for n, v, i in osv_hits(args.osv_dir, pins)]

    checked = len(skipped) - len(unreachable)
    print(f"fallback (/pypi/<name>/json): {checked} checked, {len(behind)} behind the latest release, "
          f"{len(unreachable)} unreachable")
    for line in behind:
        print(f"  behind latest, advisories fixed after the pin are not visible here: {line}")
    for line in unreachable:
        print(f"  NOT AUDITED: {line}")
    for line in found:
        print(f"  VULNERABLE: {line}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
