"""The post-filters: which raw recogniser matches are identifiers, code or placeholders rather than PII, and the
conversion of presidio's results into `Hit`s that applies them.

Why a module of its own: every scan path drops hits by the same rule (the fast `scan_texts` in
gate.pii.presidio_engine, its phone windows, and the reference loops in gate.pii.oracles), and the rule is a
question about the text and the span, not about how the engine was built or how the scan is batched. `_dropped`
depends on the span only, never the score, which is what lets the fast path skip scoring for texts whose every
match is dropped and still return exactly what the plain loop returns. The span tests themselves live in
gate.pii.context; this module says which of them applies to which entity type.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from gate.pii import context
from gate.pii.config import PiiConfig
from gate.pii.hits import Hit
from gate.pii.prefilters import _phone_run
from gate.pii.spacy_setup import _ner_pipeline

if TYPE_CHECKING:
    from presidio_analyzer import RecognizerResult

_ID_PREFIX = re.compile(r"(?:[A-Za-z]{2,}[-_]|#)$")
#: NER spans that are identifiers, versions or file names, not names or places: `TCK-40447`, `v1.17.5`, `P61`,
#: `index.html` (the small model tags these PERSON/LOCATION on ~1 in 4 clean support messages).
_NOT_A_NAME = re.compile(r"\d|[^\W\d_]\.[a-z]{2,5}\b|[()\[\]{}=<>/;|]")  # and code: `range(len(arr`, `// Append`


def _dropped(text: str, entity_type: str, start: int, end: int, config: PiiConfig,
             email_spans: Sequence[tuple[int, int]] = ()) -> bool:
    """True for hits that are identifiers, not PII (see `PiiConfig`; NER names/places containing a digit or a
    file name are dropped too). Depends on the span only, never the score.

    That independence matters: `scan_texts` uses it to skip scoring work for texts whose every raw match would
    be dropped, and stays identical to the plain loop because scores cannot change the verdict.
    """
    if entity_type == "URL":
        value = text[start:end]
        if end < len(text) and (text[end].isalnum() or text[end] == "_"):
            return True  # cut out of a longer word: "index.ht" from "index.html"
        if start > 0 and text[start - 1] == "@":
            return True  # the domain of an e-mail address
        if any(s <= start and end <= e for s, e in email_spans):
            return True
        low = value.lower().strip("\"'`")  # presidio's span can hold the quotes around it: 'run.sh'
        if not low.startswith(("http://", "https://", "www.")) and "/" not in value and value.count(".") == 1:
            if low.rsplit(".", 1)[1] in config.url_file_suffixes:
                return True  # main.py, install.sh
        return context.not_a_url(text, start, end)
    if entity_type in ("PERSON", "LOCATION", "NRP", "ORGANIZATION"):
        if (_NOT_A_NAME.search(text, start, end) or context.not_the_models_script(text[start:end])
                or context.not_english(text, start, end)):
            return True
        if entity_type == "LOCATION":
            return not context.locates_person(text, start, end)
        if entity_type == "PERSON":
            return (context.lone_name(text, start, end) or context.words_not_a_name(text[start:end])
                    or context.label_not_a_name(text, start, end, functools.partial(_lexicon, config)))
        return False
    if entity_type == "PHONE_NUMBER":
        if not _phone_run(config.phone_min_digits).search(text, start, end):
            return True
        return (bool(_ID_PREFIX.search(text, max(0, start - 16), start)) or context.labelled_an_id(text, start)
                or context.in_arithmetic(text, start, end)
                or context.not_a_phone_shape(text, start, end) or context.in_decimal(text, start, end)
                or context.not_routable_ip(text[start:end])  # 192.168.1.100 read as a phone instead
                or context.not_a_host_address(text, start, end))  # and a netmask, 255.255.255.0
    if entity_type == "CREDIT_CARD":
        return context.in_decimal(text, start, end)
    if entity_type == "IP_ADDRESS":
        return context.not_routable_ip(text[start:end]) or context.not_a_host_address(text, start, end)
    if entity_type == "EMAIL_ADDRESS":
        if end + 1 < len(text) and (text[end] == "(" or (text[end] == ":" and not text[end + 1].isspace())):
            return True  # a method call (`@in.Seek(`) or an scp-style remote (`git@github.com:owner/repo.git`)
        return context.not_an_email(text[start:end])
    return False


@functools.lru_cache(maxsize=4)
def _lexicon(config: PiiConfig) -> Callable[[str], str]:
    """word -> its classes ("n", "v", "a", "r") in the NER model's lemmatizer index (WordNet's words, read from
    the installed model, not a list of ours); "" when unknown, or for every word when the engine has no
    lemmatizer index (then no PERSON is dropped as a dictionary label). The model is the one the engine built for
    `config` analyses with (`_ner_pipeline`)."""
    tables: dict[str, frozenset[str]] = {}
    nlp = _ner_pipeline(config)
    if nlp is not None and "lemmatizer" in nlp.pipe_names:
        lookups = nlp.get_pipe("lemmatizer").lookups
        if lookups.has_table("lemma_index"):
            index = lookups.get_table("lemma_index")
            tables = {tag: frozenset(index[pos]) for tag, pos in (("n", "noun"), ("v", "verb"), ("a", "adj"),
                                                                    ("r", "adv")) if pos in index}

    def classes(word: str) -> str:
        stems = {word}
        for suffix, repl in (("ed", ""), ("ed", "e"), ("d", ""), ("ing", ""), ("ing", "e"), ("s", ""), ("es", "")):
            if word.endswith(suffix) and len(word) > len(suffix) + 2:
                stems.add(word[: -len(suffix)] + repl)
        return "".join(tag for tag, words in tables.items() if any(s in words for s in stems))

    return classes


def _to_hits(text: str, results: Sequence[RecognizerResult], offset: int, config: PiiConfig) -> list[Hit]:
    """Convert presidio results of one chunk to `Hit`s (offsets into the whole text), applying the post-filters."""
    from presidio_analyzer import RecognizerResult

    emails = [(r.start, r.end) for r in results if r.entity_type == "EMAIL_ADDRESS"]
    hits = []
    for r in results:
        if _dropped(text, r.entity_type, r.start, r.end, config, emails):
            continue
        name = (r.recognition_metadata or {}).get(RecognizerResult.RECOGNIZER_NAME_KEY, "")
        hits.append(Hit(r.entity_type, r.start + offset, r.end + offset, float(r.score), str(name)))
    return hits
