"""Prepare: recalled candidate pools fitted under a byte budget into the prepared context.

`budget` holds the body rules every output format shares (the per-body cap, the `…` cut, the
floor), `notice` the fixed trust notice, `markdown` the layout and escaping of the standard text
format, `builder` the assembly of that format (sections, limits, byte accounting), `legacy` the
output of a prepare request without an assembly, and `receipt` what each did with every candidate.
"""

from .budget import ELLIPSIS, ELLIPSIS_BYTES, MAX_BODY_BYTES, MIN_TRUNCATED_BODY_BYTES, FittedBody, fit_body
from .builder import AssemblyOptions, Section, build_text_context
from .legacy import build_legacy_context, prepare_legacy
from .markdown import document, quote_body
from .notice import TRUST_NOTICE
from .receipt import BuiltContext, Considered

__all__ = [
    "ELLIPSIS",
    "ELLIPSIS_BYTES",
    "MAX_BODY_BYTES",
    "MIN_TRUNCATED_BODY_BYTES",
    "TRUST_NOTICE",
    "AssemblyOptions",
    "BuiltContext",
    "Considered",
    "FittedBody",
    "Section",
    "build_legacy_context",
    "build_text_context",
    "document",
    "fit_body",
    "prepare_legacy",
    "quote_body",
]
