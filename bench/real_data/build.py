"""Build the real-data benchmark of issue 29: >= 25k chat rows from public instruction sets, a copy with known
faults planted in it, and the list of those faults.

Why: gate's fixtures are synthetic; this measures precision, recall of planted faults and cost on rows nobody here
wrote. Nothing is vendored: every source is read from a git mirror (the `fetch` tool's layout,
`<MIRRORS>/<owner>+<name>/repo`, a bare git dir) at a pinned commit, and each file's sha256 is checked before use.
The data is written under OUT (keep it out of git: .cache/ or /tmp).

    python bench/real_data/build.py --mirrors /work/.mirror -o .cache/real_data     # or GATE_MIRRORS=...
    gate check .cache/real_data/data -c .cache/real_data/contract.yaml -o /tmp/rd_report --no-db

OUT/data/train.jsonl   the rows with faults planted (the checked copy)
OUT/clean/train.jsonl  the same rows before planting
OUT/eval.jsonl         evaluation items (HumanEval, AQuA test, MT-bench), the contract's `evaluation_sets`
OUT/planted.jsonl      one line per planted fault: id, kind, detail
OUT/contract.yaml      bench/real_data/contract.yaml, copied next to eval.jsonl
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
import json
import os
import random
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent

# repo -> (commit, licence of the data as its repository states it)
REPOS = {
    "microsoft/CodeXGLUE": ("ac74a62802a0dd159b3258c78a2df8ad36cdf2b9", "C-UDA (data), MIT (code)"),
    "arkilpatel/SVAMP": ("689d7ccac74b9983a2ac7cc3b264f441b99e7c53", "MIT"),
    "google-deepmind/AQuA": ("26b64ed1f22208c6742f47df547dfd65088ec30d", "Apache-2.0"),
    "ShishirPatil/gorilla": ("6ea57973c7a6097fd7c5915698c54c17c5b1b6c8", "Apache-2.0"),
    "lm-sys/FastChat": ("0e6d3e4beaab66f4d3f93db72541a4abab8af28d", "Apache-2.0"),
    "LianjiaTech/BELLE": ("645084d36454cdeb4e7f1ce9b2f3426bac39f1f9", "ODC-By (DATA_LICENSE)"),
    "openai/human-eval": ("6d43fb980f9fee3c892a914eda09951f772ad10d", "MIT"),
}
_BFCL = "berkeley-function-call-leaderboard/bfcl_eval/data"
_BFCL_SETS = ["simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple",
              "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple"]
# (repo, path) -> sha256 of the file's bytes at the pinned commit
SHA256: dict[tuple[str, str], str] = json.loads((HERE / "pins.json").read_text()) if (HERE / "pins.json").exists() \
    else {}
SHA256 = {tuple(k.split(":", 1)): v for k, v in SHA256.items()}  # type: ignore[misc]


class Mirrors:
    """Reads pinned files from bare git mirrors and checks their sha256."""

    def __init__(self, root: Path, record: bool) -> None:
        self.root, self.record, self.seen = root, record, {}

    def read(self, repo: str, path: str) -> bytes:
        commit = REPOS[repo][0]
        git_dir = self.root / repo.replace("/", "+") / "repo"
        data = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"], check=True,
                              capture_output=True).stdout
        digest = hashlib.sha256(data).hexdigest()
        want = SHA256.get((repo, path))
        if want is None and not self.record:
            raise SystemExit(f"{repo}:{path}: no pinned sha256 in bench/real_data/pins.json (run with --record)")
        if want is not None and want != digest:
            raise SystemExit(f"{repo}@{commit[:7]}:{path}: sha256 {digest} != pinned {want}")
        self.seen[f"{repo}:{path}"] = digest
        return data

    def text(self, repo: str, path: str) -> str:
        data = self.read(repo, path)
        return (gzip.decompress(data) if path.endswith(".gz") else data).decode("utf-8")


def _chat(prompt: str, answer: str, system: str | None = None) -> list[dict]:
    msgs = [{"role": "system", "content": system}] if system else []
    return msgs + [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]


def _every(items: list, limit: int) -> list:
    """At most `limit` items spread evenly over the list (the same on every run)."""
    step = max(1, len(items) // limit) if limit else 1
    return items[::step][:limit]


def code_rows(m: Mirrors) -> Iterator[tuple[str, str, list[dict]]]:
    repo, base = "microsoft/CodeXGLUE", "Code-Code/code-to-code-trans/data/train.java-cs.txt"
    java, cs = m.text(repo, base + ".java").splitlines(), m.text(repo, base + ".cs").splitlines()
    for i, (j, c) in enumerate(_every(list(zip(java, cs, strict=True)), 8000)):
        yield f"java2cs-{i:05d}", "codexglue_java_cs", _chat(f"Translate this Java method to C#:\n\n{j}", c)
    base = "Code-Code/code-refinement/data/small/valid.buggy-fixed"
    bug, fix = m.text(repo, base + ".buggy").splitlines(), m.text(repo, base + ".fixed").splitlines()
    for i, (b, f) in enumerate(_every(list(zip(bug, fix, strict=True)), 5000)):
        yield f"refine-{i:05d}", "codexglue_refine", _chat(f"Fix the bug in this Java method:\n\n{b.strip()}",
                                                           f.strip())
    for i, line in enumerate(m.text(repo, "Text-Code/text-to-code/dataset/concode/dev.json").splitlines()):
        row = json.loads(line)
        nl = row["nl"].split("concode_field_sep")[0].strip()
        yield f"concode-{i:05d}", "codexglue_concode", _chat(f"Write a Java method that does this: {nl}",
                                                             row["code"])


def math_rows(m: Mirrors) -> Iterator[tuple[str, str, list[dict]]]:
    repo = "arkilpatel/SVAMP"
    seen: set[str] = set()
    n = 0
    for part in ("train", "dev"):
        for row in csv.DictReader(io.StringIO(m.text(repo, f"data/mawps-asdiv-a_svamp/{part}.csv"))):
            q = row["Question"]
            for k, num in enumerate(row["Numbers"].split()):
                num = num[:-2] if num.endswith(".0") else num
                q = q.replace(f"number{k}", num)
            q = q.replace(" .", ".").replace(" ,", ",").replace(" ?", "?")
            if q in seen:
                continue
            seen.add(q)
            ans = float(row["Answer"])
            ans_s = str(int(ans)) if ans == int(ans) else f"{ans:g}"
            yield f"svamp-{n:05d}", "mawps_asdiv_svamp", _chat(q, f"The answer is {ans_s}.")
            n += 1
    for i, line in enumerate(m.text("google-deepmind/AQuA", "dev.json").splitlines()):
        row = json.loads(line)
        yield (f"aqua-{i:04d}", "aqua_dev",
               _chat(row["question"] + "\nOptions: " + " ".join(row["options"]), row["rationale"]))


def tool_rows(m: Mirrors) -> Iterator[tuple[str, str, list[dict]]]:
    repo = "ShishirPatil/gorilla"
    n = 0
    for name in ("torchhub_train", "huggingface_eval", "tensorflow_eval"):
        for line in m.text(repo, f"data/apibench/{name}.json").splitlines():
            row = json.loads(line)
            code = row["code"]
            if "###Instruction:" in code and "###Output:" in code:
                prompt, out = code.split("###Output:", 1)
                prompt = prompt.split("###Instruction:", 1)[1]
            elif "'Instruction':" in code and "'Output':" in code:
                prompt, out = code.split("'Output':", 1)
                prompt = prompt.split("'Instruction':", 1)[1].strip(" ,")
            else:
                continue
            yield f"apibench-{n:05d}", f"apibench_{name.split('_')[0]}", _chat(prompt.strip(), out.strip(" }"))
            n += 1
    for sub in _BFCL_SETS:
        qs = [json.loads(x) for x in m.text(repo, f"{_BFCL}/BFCL_v4_{sub}.json").splitlines()]
        answers = {json.loads(x)["id"]: json.loads(x)["ground_truth"]
                   for x in m.text(repo, f"{_BFCL}/possible_answer/BFCL_v4_{sub}.json").splitlines()}
        for q in qs:
            if q["id"] not in answers or len(q["question"]) != 1:
                continue
            calls = []
            for call in answers[q["id"]]:
                (fn, args), = call.items()
                calls.append(fn + "(" + ", ".join(f"{k}={json.dumps(v[0])}" for k, v in args.items()
                                                  if v and v[0] != "") + ")")
            system = "You can call these functions; answer with the calls only.\n" + json.dumps(q["function"])
            turns = q["question"][0]
            msgs = ([{"role": "system", "content": system}]
                    + [{"role": t["role"], "content": t["content"]} for t in turns if t["role"] != "system"]
                    + [{"role": "assistant", "content": "\n".join(calls)}])
            if msgs[1]["role"] == "user":
                yield f"bfcl-{q['id']}", "bfcl", msgs


def chat_rows(m: Mirrors) -> Iterator[tuple[str, str, list[dict]]]:
    for conv in json.loads(m.text("lm-sys/FastChat", "data/dummy_conversation.json")):
        role = {"human": "user", "gpt": "assistant"}
        msgs = [{"role": role[t["from"]], "content": t["value"]} for t in conv["conversations"]]
        if msgs and msgs[-1]["role"] == "assistant":
            yield f"fastchat-{conv['id']}", "fastchat_dummy", msgs


def zh_rows(m: Mirrors) -> Iterator[tuple[str, str, list[dict]]]:
    repo = "LianjiaTech/BELLE"
    for i, row in enumerate(map(json.loads, m.text(repo, "eval/eval_set.json").splitlines())):
        yield f"belle-eval-{i:04d}", "belle_eval_zh", _chat(row["question"], row["std_answer"])
    for line in m.text(repo, "data/1.5M/zh_seed_tasks.json").splitlines():
        row = json.loads(line)
        inst = row["instances"][0]
        prompt = row["instruction"] + (f"\n{inst['input']}" if inst["input"] else "")
        yield f"belle-seed-{row['id']}", "belle_seed_zh", _chat(prompt, inst["output"])


def eval_items(m: Mirrors) -> list[dict]:
    items = []
    for line in m.text("openai/human-eval", "data/HumanEval.jsonl.gz").splitlines():
        row = json.loads(line)
        items.append({"id": row["task_id"].replace("/", "-"), "messages": _chat(row["prompt"],
                                                                                 row["canonical_solution"])})
    for i, line in enumerate(m.text("google-deepmind/AQuA", "test.json").splitlines()):
        row = json.loads(line)
        items.append({"id": f"aqua-test-{i:03d}", "messages": _chat(
            row["question"] + "\nOptions: " + " ".join(row["options"]), row["rationale"])})
    for line in m.text("lm-sys/FastChat", "fastchat/llm_judge/data/mt_bench/question.jsonl").splitlines():
        row = json.loads(line)
        items.append({"id": f"mtbench-{row['question_id']}", "messages": [{"role": "user",
                                                                           "content": row["turns"][0]}]})
    return items


# ---- planted faults ------------------------------------------------------------------------------------------
_FIRST = ["Maria", "Jonas", "Aisha", "Tomasz", "Priya", "Lukas", "Fatima", "Henrik", "Chloe", "Mateo", "Ingrid",
          "Rahul", "Sofia", "Dmitri", "Elena", "Kwame"]
_LAST = ["Kowalski", "Lindqvist", "Okafor", "Brennan", "Castellano", "Hoffmann", "Nakamura", "Petrovic",
         "Delacroix", "Sandoval", "Achterberg", "Rasmussen", "Gallagher", "Moreau"]
_STREETS = ["Birchwood Avenue", "Kingsley Road", "Elmhurst Lane", "Harbor View Drive", "Maple Crest Court"]
_CITIES = [("Portland, OR 97205", "+1 503"), ("Austin, TX 78704", "+1 512"), ("Denver, CO 80206", "+1 303"),
           ("Columbus, OH 43215", "+1 614")]
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _pii(rng: random.Random) -> tuple[str, str]:
    first, last = rng.choice(_FIRST), rng.choice(_LAST)
    city, area = rng.choice(_CITIES)
    kind = rng.choice(["email", "phone", "address"])
    if kind == "email":
        number = rng.randint(10, 99)  # drawn before the domain: the order fixes the planted values
        value = f"{first.lower()}.{last.lower()}{number}@{rng.choice(['gmail.com', 'outlook.com', 'yahoo.com'])}"
        return value, f"By the way, I'm {first} {last}; if the answer is long, email it to me at {value}."
    if kind == "phone":
        value = f"{area} {rng.randint(201, 989)}-{rng.randint(1000, 9999)}"
        return value, f"If something is unclear, {first} {last} here, call me on {value}."
    value = f"{rng.randint(12, 9899)} {rng.choice(_STREETS)}, {city}"
    return value, f"Please mail the printed answer to {first} {last}, {value}."


def _secret(rng: random.Random) -> tuple[str, str]:
    r = lambda n, a=_ALNUM: "".join(rng.choice(a) for _ in range(n))  # noqa: E731
    kind = rng.choice(["aws", "github", "slack", "stripe", "private_key"])
    if kind == "aws":
        v = "AKIA" + r(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        return v, f'\n\n# config used above\nAWS_ACCESS_KEY_ID = "{v}"\nAWS_SECRET_ACCESS_KEY = "{r(40)}"'
    if kind == "github":
        v = "ghp_" + r(36)
        return v, f'\n\nexport GITHUB_TOKEN={v}'
    if kind == "slack":
        v = f"xoxb-{rng.randint(10**11, 10**12 - 1)}-{rng.randint(10**12, 10**13 - 1)}-{r(24)}"
        return v, f'\n\nslack_client = WebClient(token="{v}")'
    if kind == "stripe":
        v = "sk_live_" + r(24)
        return v, f'\n\nstripe.api_key = "{v}"'
    body = "\n".join(r(64, _ALNUM + "+/") for _ in range(6))
    v = "-----BEGIN RSA PRIVATE KEY-----"
    return v, f"\n\n{v}\nMIIEpAIBAAKCAQEA{body}\n-----END RSA PRIVATE KEY-----"


def _near(text: str, rng: random.Random) -> str:
    """A near copy: two words changed and a short tail, as a re-scraped or lightly edited row would be."""
    words = text.split(" ")
    for _ in range(2):
        i = rng.randrange(len(words))
        words[i] = words[i].upper() if rng.random() < 0.5 else words[i] + ","
    return " ".join(words) + " Thanks!"


def plant(rows: list[dict], items: list[dict], per_kind: int, rng: random.Random) -> tuple[list[dict], list[dict]]:
    """Plant `per_kind` faults of each kind into a copy of `rows`; returns (rows, planted records)."""
    rows = json.loads(json.dumps(rows))
    planted: list[dict] = []
    en = [i for i, r in enumerate(rows) if not r["language"].startswith("zh")]
    targets = rng.sample(en, per_kind * 4)
    for n, i in enumerate(targets):
        row, kind = rows[i], ("pii", "secret", "contamination", "contract")[n // per_kind]
        user = next(msg for msg in row["messages"] if msg["role"] == "user")
        if kind == "pii":
            value, sentence = _pii(rng)
            user["content"] += "\n\n" + sentence
        elif kind == "secret":
            value, tail = _secret(rng)
            row["messages"][-1]["content"] += tail
        elif kind == "contamination":
            item = items[rng.randrange(len(items))]
            user["content"] = item["messages"][0]["content"]
            if len(item["messages"]) > 1:
                row["messages"][-1]["content"] = item["messages"][1]["content"]
            value = item["id"]
        else:
            sub = ("final_role", "empty_answer", "unknown_source", "bad_role")[n % 4]
            if sub == "final_role":
                row["messages"].append({"role": "user", "content": "Thanks, one more question."})
            elif sub == "empty_answer":
                row["messages"][-1]["content"] = ""
            elif sub == "unknown_source":
                row["source"] = "scraped_forum"
            else:
                user["role"] = "human"
            value = sub
        planted.append({"id": row["id"], "kind": kind, "detail": value})
    long_rows = [r for r in rows if len(" ".join(m["content"] or "" for m in r["messages"]).split()) >= 60
                 and r["id"] not in {p["id"] for p in planted}]
    for kind in ("exact_duplicate", "near_duplicate"):
        for n, src in enumerate(rng.sample(long_rows, per_kind)):
            dup = json.loads(json.dumps(src))
            dup["id"] = f"{src['id']}-{kind[:5]}{n:03d}"
            if kind == "near_duplicate":
                dup["messages"][-1]["content"] = _near(dup["messages"][-1]["content"], rng)
            rows.insert(rng.randrange(len(rows)), dup)
            planted.append({"id": dup["id"], "kind": kind, "detail": src["id"]})
    return rows, planted


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirrors", type=Path, default=Path(os.environ.get("GATE_MIRRORS", "/work/.mirror")),
                    help="folder of bare git mirrors <owner>+<name>/repo [env GATE_MIRRORS]")
    ap.add_argument("-o", "--out", type=Path, default=Path(".cache/real_data"))
    ap.add_argument("--per-kind", type=int, default=60, help="planted faults per kind")
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--record", action="store_true", help="write the sha256 of every file read to pins.json")
    args = ap.parse_args()
    m = Mirrors(args.mirrors, args.record)
    rows = []
    for gen, lang in ((code_rows, "en"), (math_rows, "en"), (tool_rows, "en"), (chat_rows, "en"),
                      (zh_rows, "zh")):
        rows += [{"id": rid, "source": src, "language": lang, "messages": msgs} for rid, src, msgs in gen(m)]
    items = eval_items(m)
    faulty, planted = plant(rows, items, args.per_kind, random.Random(args.seed))
    if args.record:
        (HERE / "pins.json").write_text(json.dumps(m.seen, indent=1, sort_keys=True) + "\n")
    for sub, data in (("clean/train.jsonl", rows), ("data/train.jsonl", faulty), ("eval.jsonl", items),
                      ("planted.jsonl", planted)):
        path = args.out / sub
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in data)
    shutil.copy(HERE / "contract.yaml", args.out / "contract.yaml")
    by_src: dict[str, int] = {}
    for r in rows:
        by_src[r["source"]] = by_src.get(r["source"], 0) + 1
    print(json.dumps({"rows": len(rows), "rows_planted": len(faulty), "eval_items": len(items),
                      "planted": len(planted), "by_source": by_src}, indent=1))


if __name__ == "__main__":
    main()
