"""The one place gate turns a JSON Schema it did not write into a validator.

Schemas come from contracts, scorecards and datasets, i.e. from pull requests nobody has reviewed yet, so:

- **No retrieval.** jsonschema's default registry fetches any `$ref` it cannot resolve over HTTP (deprecated,
  no timeout): a `$ref` to a server that never answers hangs `gate check`, and a dataset PR can make CI fetch
  any URL. Every validator here gets a `referencing.Registry` whose `retrieve` refuses; only references inside
  the document itself (JSON pointers, `$anchor`, embedded `$id` resources) and the JSON Schema meta-schemas
  (bundled by jsonschema-specifications) resolve. `check_schema` walks every `$ref`/`$dynamicRef` at load time
  so a reference that would be refused is one line naming the file, the place and the ref, before any row is read.
- **ECMA-262 regular expressions, matched in linear time.** JSON Schema's `pattern`, `patternProperties` and
  `format: regex` are ECMA-262; Python's `re` differs (`\\p{Letter}` does not compile, `$` matches before a
  trailing newline, `\\d` matches any Unicode digit). A schema pattern must compile on `regress` (the Rust
  ECMA-262 engine, so it means what the schema author meant) and is then matched by RE2 (gate.contract.patterns):
  a backtracking engine takes exponential time on one crafted string (`^(a|aa)+$`), RE2 never does. A pattern
  RE2 cannot run (lookaround, backreference) is refused at load. `unevaluatedProperties`, which reads
  `patternProperties` too, is gate's own keyword here for the same reason.
- **Formats asserted on purpose.** `format` is an annotation unless a checker asserts it; `format_checker`
  asserts exactly the listed formats (each needs an installed checker); by default every installed one except
  those whose checker is too loose to trust (`LOOSE_FORMATS`, e.g. `email`: only an '@' is checked), so a
  caller can say what is not asserted.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

#: keywords of draft 2020-12 (and the older spellings jsonschema still applies) whose value is a subschema,
#: a list of subschemas or a mapping of names to subschemas: where `$ref`s and patterns are looked for
_ONE = ("additionalProperties", "contains", "items", "not", "if", "then", "else", "propertyNames",
        "unevaluatedItems", "unevaluatedProperties", "contentSchema", "additionalItems")
_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
_MAP = ("properties", "patternProperties", "dependentSchemas", "$defs", "definitions")
#: the keywords among those that apply their subschemas to the same instance (not to a property or an item)
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_LIST = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAP = ("dependentSchemas",)


class SchemaProblem(Exception):
    """A schema gate will not use; `path` is where in the schema (a JSON path the caller maps to a file line)."""

    def __init__(self, message: str, path: Sequence[Any] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.path = list(path)


def _refuse(uri: str) -> Any:
    from referencing.exceptions import NoSuchResource

    raise NoSuchResource(ref=uri)


@functools.cache
def registry() -> Any:
    """The registry every validator gets: the bundled meta-schemas, nothing retrievable."""
    from jsonschema_specifications import REGISTRY as SPECIFICATIONS
    from referencing import Registry

    return SPECIFICATIONS.combine(Registry(retrieve=_refuse))  # type: ignore[call-arg]


@functools.lru_cache(maxsize=4096)
def ecma_regex(pattern: str) -> Any:
    """A compiled ECMA-262 regex (unicode mode, as JSON Schema means); raises SchemaProblem if it is not one."""
    import regress

    try:
        return regress.Regex(pattern, "u")
    except regress.RegressError as exc:
        raise SchemaProblem(f"invalid ECMA-262 regular expression {pattern[:60]!r} ({exc})") from None


def _is_ecma_regex(instance: object) -> bool:
    if not isinstance(instance, str):
        return True
    try:
        ecma_regex(instance)
    except SchemaProblem:
        return False
    return True


#: formats whose installed checker is too loose to assert unless a scorecard or contract lists it: an assertion
#: that passes most malformed values would be a false PASS (agreement with the JSON-Schema-Test-Suite's
#: optional/format cases in brackets, bench/results/jsonschema_suite.md)
LOOSE_FORMATS = {
    "email": "jsonschema only checks that an '@' is present: '.a@b', 'a@', two addresses pass (63%)",
    "idn-email": "jsonschema only checks that an '@' is present, as for email",
    "hostname": "fqdn passes a trailing dot or newline, invalid Punycode and IDNA-disallowed characters (59%)",
    "duration": "isoduration passes signs, fractions, exponents and weeks mixed with other units (81%)",
    "uri-template": "uri-template passes spaces in literals, trailing commas, defaults in a varspec (76%)",
}
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
_LEAP = re.compile(r"(?P<date>\d{4}-\d{2}-\d{2}[Tt])?(?P<h>\d{2}):(?P<m>\d{2}):60(?:\.\d+)?"
                   r"(?P<off>[Zz]|[+-]\d{2}:\d{2})\Z")


def _is_uuid(instance: object) -> bool:
    """RFC 4122's textual form exactly (Python's UUID() also takes braces, 'urn:uuid:', non-ASCII digits...)."""
    return not isinstance(instance, str) or _UUID.match(instance) is not None


def _rfc3339(check: Any, with_date: bool) -> Any:
    """rfc3339-validator, made exact at two edges: its `$` lets a trailing newline through, and it refuses the
    leap second RFC 3339 allows (second 60, when the time is 23:59 in UTC)."""
    def is_valid(instance: object) -> bool:
        if not isinstance(instance, str):
            return True
        if "\n" in instance:
            return False
        m = _LEAP.match(instance)
        if m and (m["date"] is not None) == with_date:
            off = 0 if m["off"] in "Zz" else (1 if m["off"][0] == "+" else -1) * (
                int(m["off"][1:3]) * 60 + int(m["off"][4:6]))
            if (int(m["h"]) * 60 + int(m["m"]) - off) % 1440 != 23 * 60 + 59:
                return False
            instance = instance[:m.end("m")] + ":59" + instance[m.end("m") + 3:]
        return bool(check(instance))
    return is_valid


def available_formats() -> list[str]:
    """The draft 2020-12 formats a checker is installed for (jsonschema's own plus `jsonschema[format-nongpl]`)."""
    from jsonschema import Draft202012Validator

    return sorted(Draft202012Validator.FORMAT_CHECKER.checkers)


def default_formats() -> list[str]:
    """What is asserted when nobody lists formats: every installed checker except the LOOSE_FORMATS."""
    return [f for f in available_formats() if f not in LOOSE_FORMATS]


def format_checker(formats: Iterable[str] | None = None) -> Any:
    """A FormatChecker asserting exactly `formats` (None: `default_formats()`); `regex` is ECMA-262, `uuid`,
    `date-time` and `time` exact (see `_rfc3339`)."""
    from jsonschema import Draft202012Validator, FormatChecker

    known = Draft202012Validator.FORMAT_CHECKER.checkers
    if formats is not None and (isinstance(formats, str) or not all(isinstance(f, str) for f in formats)):
        raise SchemaProblem("formats must be a list of format names (e.g. [date-time, uri])")
    wanted = default_formats() if formats is None else list(formats)
    unknown = [f for f in wanted if f not in known]
    if unknown:
        raise SchemaProblem(f"no checker for format(s) {unknown} (installed: {sorted(known)})")
    checker = FormatChecker(formats=())
    checker.checkers = {f: known[f] for f in wanted}
    if "regex" in checker.checkers:
        checker.checkers["regex"] = (_is_ecma_regex, ())
    if "uuid" in checker.checkers:
        checker.checkers["uuid"] = (_is_uuid, ())
    for name, with_date in (("date-time", True), ("time", False)):
        if name in checker.checkers:
            func, raises = checker.checkers[name]
            checker.checkers[name] = (_rfc3339(func, with_date), raises)
    return checker


def schema_regex(pattern: str) -> Any:
    """The RE2 program for a schema pattern: valid ECMA-262 first (SchemaProblem otherwise), then RE2 with
    ECMA-262's meaning (gate.contract.patterns); SchemaProblem when RE2 cannot run it."""
    from gate.contract.patterns import PatternProblem, compile_pattern

    ecma_regex(pattern)
    try:
        return compile_pattern(pattern, "ecma")
    except PatternProblem as exc:
        raise SchemaProblem(f"pattern {pattern[:60]!r} refused: {exc}") from None


def _ecma_keywords() -> dict[str, Any]:
    """`pattern`, `patternProperties`, and `additionalProperties` and `unevaluatedProperties` (which read the
    patterns), matched by RE2: jsonschema's own use Python's `re`, which can backtrack for minutes on one row."""
    from jsonschema import ValidationError

    def pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "string") and schema_regex(patrn).search(instance) is None:
            yield ValidationError(f"{instance!r} does not match {patrn!r}")

    def pattern_properties(validator: Any, pprops: dict[str, Any], instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for patrn, subschema in pprops.items():
            rx = schema_regex(patrn)
            for k, v in instance.items():
                if rx.search(k) is not None:
                    yield from validator.descend(v, subschema, path=k, schema_path=patrn)

    def additional_properties(validator: Any, ap: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        props = schema.get("properties", {})
        rxs = [schema_regex(p) for p in schema.get("patternProperties", {})]
        extras = [k for k in instance if k not in props and not any(r.search(k) is not None for r in rxs)]
        if validator.is_type(ap, "object"):
            for extra in extras:
                yield from validator.descend(instance[extra], ap, path=extra)
        elif not ap and extras:
            yield ValidationError(f"Additional properties are not allowed ({', '.join(map(repr, sorted(extras)))} "
                                  f"{'was' if len(extras) == 1 else 'were'} unexpected)")

    def unevaluated_properties(validator: Any, uprops: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        evaluated = _evaluated_keys(validator, instance, schema)
        bad = [k for k in instance if k not in evaluated and any(True for _ in validator.descend(
            instance[k], uprops, path=k, schema_path=k))]
        if bad and uprops is False:
            yield ValidationError(f"Unevaluated properties are not allowed ({', '.join(map(repr, sorted(bad)))} "
                                  f"{'was' if len(bad) == 1 else 'were'} unexpected)")
        elif bad:
            yield ValidationError(f"Unevaluated properties are not valid under the given schema "
                                  f"({', '.join(map(repr, bad))} {'was' if len(bad) == 1 else 'were'} "
                                  "unevaluated and invalid)")

    return {"pattern": pattern, "patternProperties": pattern_properties,
            "additionalProperties": additional_properties, "unevaluatedProperties": unevaluated_properties}


def _evaluated_keys(validator: Any, instance: Any, schema: Any) -> set[str]:
    """jsonschema's `find_evaluated_property_keys_by_schema` (4.x), with patternProperties matched by RE2."""
    if validator.is_type(schema, "boolean"):
        return set()
    keys: set[str] = set()
    for kw in ("$ref", "$dynamicRef"):
        ref = schema.get(kw)
        if ref is not None:
            resolved = validator._resolver.lookup(ref)
            keys |= _evaluated_keys(validator.evolve(schema=resolved.contents, _resolver=resolved.resolver),
                                    instance, resolved.contents)
    props = schema.get("properties")
    if validator.is_type(props, "object"):
        keys |= props.keys() & instance.keys()
    for kw in ("additionalProperties", "unevaluatedProperties"):
        sub = schema.get(kw)
        if sub is not None:
            keys |= {k for k, v in instance.items() if not any(True for _ in validator.descend(v, sub))}
    if "patternProperties" in schema:
        rxs = [schema_regex(p) for p in schema["patternProperties"]]
        keys |= {k for k in instance if any(r.search(k) is not None for r in rxs)}
    for prop, sub in (schema.get("dependentSchemas") or {}).items():
        if prop in instance:
            keys |= _evaluated_keys(validator, instance, sub)
    for kw in ("allOf", "oneOf", "anyOf"):
        for sub in schema.get(kw, []):
            if not any(True for _ in validator.descend(instance, sub)):
                keys |= _evaluated_keys(validator, instance, sub)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys |= _evaluated_keys(validator, instance, schema["if"])
            if "then" in schema:
                keys |= _evaluated_keys(validator, instance, schema["then"])
        elif "else" in schema:
            keys |= _evaluated_keys(validator, instance, schema["else"])
    return keys


@functools.lru_cache(maxsize=16)
def _extended(base: Any) -> Any:
    from jsonschema import validators

    return validators.extend(base, validators=_ecma_keywords())


def validator(schema: Any, *, formats: Iterable[str] | None = None, cls: Any = None, assert_formats: bool = True
              ) -> Any:
    """A validator for `schema` (draft 2020-12, or `cls`, a class extended from it) with the refusing registry,
    ECMA-262 patterns and the format checker for `formats`. Call `check_schema` first on untrusted schemas."""
    from jsonschema import Draft202012Validator

    klass = _extended(cls or Draft202012Validator)
    return klass(schema, registry=registry(),
                 format_checker=format_checker(formats) if assert_formats else None)


def check_schema(schema: Any, *, formats: Iterable[str] | None = None) -> None:
    """Refuses, as a SchemaProblem with its place, a schema that is not valid draft 2020-12, whose patterns are
    not ECMA-262, that references anything outside itself, or that lists a format without a checker."""
    from jsonschema.exceptions import best_match

    err = best_match(_meta_validator().iter_errors(schema))
    if err is not None:
        if err.validator == "format" and err.validator_value == "regex" and isinstance(err.instance, str):
            _pattern_ok(err.instance, list(err.absolute_path))  # says why, as ECMA-262 sees it
        raise SchemaProblem(f"invalid JSON Schema: {err.message}", list(err.absolute_path))
    if formats is not None:
        format_checker(formats)
    if isinstance(schema, bool):
        return
    from referencing.jsonschema import DRAFT202012

    root = DRAFT202012.create_resource(schema)
    graph: dict[int, tuple[list[Any], list[tuple[Any, str]]]] = {}
    _walk(registry().resolver_with_root(root), schema, [], graph=graph)
    _refuse_ref_loops(graph)


@functools.cache
def _meta_validator() -> Any:
    """Draft202012Validator.check_schema's validator, with `format: regex` (the meta-schema's for `pattern`) as
    ECMA-262 rather than Python's re."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(Draft202012Validator.META_SCHEMA, registry=registry(),
                                format_checker=format_checker(None))


def _walk(resolver: Any, node: Any, path: list[Any],
          graph: dict[int, tuple[list[Any], list[tuple[Any, str]]]] | None = None) -> None:
    """Checks every `$ref` and pattern under `node`; `graph` collects, per subschema (by identity), its place and
    the subschemas it applies to the same part of the instance (`_refuse_ref_loops`)."""
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    if not isinstance(node, dict):
        return
    if "$id" in node and path:
        resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
    same: list[tuple[Any, str]] = []  # (subschema, keyword) applied to the same instance as `node`
    for kw in ("$ref", "$dynamicRef"):
        ref = node.get(kw)
        if isinstance(ref, str):
            try:
                same.append((resolver.lookup(ref).contents, f"{kw} {ref[:120]!r}"))
            except Unresolvable:
                raise SchemaProblem(
                    f"{kw} {ref[:120]!r} does not resolve inside this schema; gate never fetches a schema over the "
                    "network or from files: put the definition under $defs", [*path, kw]) from None
    if graph is not None:
        same += [(node[kw], kw) for kw in _IN_PLACE_ONE if kw in node]
        same += [(sub, kw) for kw in _IN_PLACE_LIST if isinstance(node.get(kw), list) for sub in node[kw]]
        same += [(sub, kw) for kw in _IN_PLACE_MAP if isinstance(node.get(kw), dict) for sub in node[kw].values()]
        graph[id(node)] = (path, same)
    if isinstance(node.get("pattern"), str):
        _pattern_ok(node["pattern"], [*path, "pattern"])
    for kw in _ONE:
        if kw in node:
            _walk(resolver, node[kw], [*path, kw], graph)
    for kw in _LIST:
        if isinstance(node.get(kw), list):
            for i, sub in enumerate(node[kw]):
                _walk(resolver, sub, [*path, kw, i], graph)
    for kw in _MAP:
        if isinstance(node.get(kw), dict):
            for name, sub in node[kw].items():
                if kw == "patternProperties":
                    _pattern_ok(name, [*path, kw, name])
                _walk(resolver, sub, [*path, kw, name], graph)


def _refuse_ref_loops(graph: dict[int, tuple[list[Any], list[tuple[Any, str]]]]) -> None:
    """A `$ref` chain that comes back to a subschema without descending into the instance (`$ref: '#'` at the
    root, `a` -> `b` -> `a`, or through allOf/anyOf/oneOf/not/if) makes every validation recurse forever (a
    RecursionError in the middle of `gate check`): refused at load, as a SchemaProblem at the `$ref` that closes
    the loop. A `$ref` under `properties` or `items` (a tree) reads a smaller part of the instance each time and
    is fine."""
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    for start in graph:
        if start in state:
            continue
        state[start] = 1
        stack = [(start, iter(graph[start][1]))]  # iterative: a deep but finite schema is no loop either
        while stack:
            key, todo = stack[-1]
            for sub, how in todo:
                nxt = id(sub)
                if nxt not in graph:
                    continue  # a boolean schema, or one the walk did not reach (it is checked where it is)
                if state.get(nxt) == 1:
                    path = graph[key][0]
                    where = [*path, how.split(" ")[0]] if how.startswith("$") else path
                    target = "/".join(str(p) for p in graph[nxt][0]) or "the schema's root"
                    raise SchemaProblem(f"{how} loops back to {target} without reading any part of the answer (it "
                                        "would recurse forever): a recursive schema must go through properties or "
                                        "items", where)
                if nxt not in state:
                    state[nxt] = 1
                    stack.append((nxt, iter(graph[nxt][1])))
                    break
            else:
                state[key] = 2
                stack.pop()


def _pattern_ok(pattern: str, path: list[Any]) -> None:
    """ECMA-262 (what the schema means) and runnable by RE2 (what matches it, in linear time)."""
    try:
        schema_regex(pattern)
    except SchemaProblem as exc:
        raise SchemaProblem(exc.message, path) from None
