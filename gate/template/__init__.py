"""What training actually sees: the chat template audit.

A model learns from the tokens its chat template produces and from the tokens that carry loss, not from the
JSON rows. This package renders rows with the tokenizer's own chat template (transformers' Jinja environment
and message normalisation), tokenizes them with the fast tokenizer in batches, computes the loss mask the way
trainers do (prefix by prefix like NeMo AutoModel, or from `{% generation %}` blocks), and checks stop tokens,
reasoning retention, control tokens in text and tool-call round trips through the serving engine's parser.

Heavy imports (transformers) happen inside functions: importing this package is cheap.
"""

from gate.template.options import TemplateOptions

__all__ = ["TemplateOptions"]
