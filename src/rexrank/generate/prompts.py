"""Prompts for instruction-following models, and turning a model's answer into the report a track scores.

The default prompts are rexrank's own wording (upstream ReXrank does not prescribe one: each submission brings its
own `inference.py`). A template may use the placeholders {context}, {n_images} and {views}.
"""

from __future__ import annotations

import re
import string

from rexrank.data.tracks import FINDINGS
from rexrank.errors import ConfigError

DEFAULT_PROMPTS: dict[str, str] = {
    "findings": "Write the findings section of the radiology report for this chest X-ray study.{context}",
    "findings_impression": (
        "Write the radiology report for this chest X-ray study, as 'Findings: ... Impression: ...'.{context}"
    ),
}
# How the study's context (indication / comparison) enters the default prompts; empty when absent or disabled.
CONTEXT_BLOCK = " Clinical context: {text}"

PLACEHOLDERS = ("context", "n_images", "views")

_HEADER = re.compile(r"\b(findings|impression)\s*:", re.IGNORECASE)


def check_template(template: str) -> str:
    """Reject templates with unknown or malformed {placeholders} before any model is loaded."""
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        raise ConfigError(f"Invalid prompt template {template!r}: {exc}. Write literal braces as {{{{ and }}}}.") \
            from None
    unknown = sorted({f for f in fields if f not in PLACEHOLDERS})
    if unknown:
        raise ConfigError(f"Unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)} in the prompt "
                          f"template. Available: {', '.join('{' + p + '}' for p in PLACEHOLDERS)}.")
    return template


def render_prompt(template: str, *, context: str | None, n_images: int, views: list[str | None]) -> str:
    block = CONTEXT_BLOCK.format(text=" ".join(context.split())) if context else ""
    view_text = ", ".join(v for v in views if v) or "unknown"
    return template.format(context=block, n_images=n_images, views=view_text)


def split_sections(text: str) -> dict[str, str | None]:
    """{"findings", "impression"} from an answer with "Findings:" / "Impression:" headers (either order).

    Text before the first header is ignored when a header is present; a header that does not appear gives None.
    Without any header both are None (the caller decides what the whole answer means).
    """
    matches = list(_HEADER.finditer(text))
    sections: dict[str, str | None] = {"findings": None, "impression": None}
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        name = match.group(1).lower()
        body = " ".join(text[match.end():end].split())
        if sections[name] is None:  # the first occurrence wins; a repeated header is kept inside the text
            sections[name] = body or None
        else:
            sections[name] = f"{sections[name]} {match.group(0)} {body}".strip()
    return sections


def format_report(answer: str, track: str) -> str:
    """The prediction for `track` from a model's answer.

    findings: the findings section when the answer has headers (an answer with only an impression header
    gives ""), else the whole answer. findings_impression: "Findings: {f} Impression: {i}" rebuilt from the
    headers (the shape of ReXrank's ground truth, see rexrank.data.study.findings_impression_text), else the
    whole answer. Whitespace runs are collapsed either way.
    """
    from rexrank.data.study import findings_impression_text

    sections = split_sections(answer)
    has_headers = any(v is not None for v in sections.values()) or bool(_HEADER.search(answer))
    if not has_headers:
        return " ".join(answer.split())
    if track == FINDINGS:
        return sections["findings"] or ""
    return findings_impression_text(sections["findings"], sections["impression"])
