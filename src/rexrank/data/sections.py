"""Findings and impression sections of a raw MIMIC-CXR free-text report.

The conventions are those of the MIMIC-CXR section parser (MIT-LCP/mimic-cxr, txt/section_parser.py), the one
behind the widely used `mimic_cxr_sectioned.csv`: a section starts at a line " HEADER:" written in capitals; the
header is normalised (typos, synonyms such as CONCLUSION -> impression, "FINDINGS AND IMPRESSION" -> impression);
empty findings/impression sections are dropped; the last section of each name wins. This module is our own
implementation of those rules; the header table below reproduces the upstream one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rexrank.data.study import clean_section

# A header is capitals (and a few punctuation marks) after a newline and one space, ended by ":" and whitespace.
# Source: section_parser.section_text, pattern r'\n ([A-Z ()/,-]+):\s'.
_HEADER = re.compile(r"\n ([A-Z ()/,-]+):\s")

# Source: section_parser.normalize_section_names, `frequent_sections` (counts over all MIMIC-CXR reports there).
HEADER_NAMES = {
    "preamble": "preamble", "impression": "impression", "comparison": "comparison", "indication": "indication",
    "findings": "findings", "examination": "examination", "technique": "technique", "history": "history",
    "comparisons": "comparison", "clinical history": "history", "reason for examination": "indication",
    "notification": "notification", "reason for exam": "indication", "clinical information": "history",
    "exam": "examination", "clinical indication": "indication", "conclusion": "impression",
    "chest, two views": "findings", "recommendation(s)": "recommendations", "type of examination": "examination",
    "reference exam": "comparison", "patient history": "history", "addendum": "addendum",
    "comparison exam": "comparison", "date": "date", "comment": "comment", "findings and impression": "impression",
    "wet read": "wet read", "comparison film": "comparison", "recommendations": "recommendations",
    "findings/impression": "impression", "pfi": "history", "recommendation": "recommendations",
    "wetread": "wet read", "ndication": "impression", "impresson": "impression", "imprression": "impression",
    "imoression": "impression", "impressoin": "impression", "imprssion": "impression", "impresion": "impression",
    "imperssion": "impression", "mpression": "impression", "impession": "impression",
    "findings/ impression": "impression", "finding": "findings", "findins": "findings", "findindgs": "findings",
    "findgings": "findings", "findngs": "findings", "findnings": "findings", "finidngs": "findings",
    "idication": "indication", "reference findings": "findings", "comparision": "comparison",
    "comparsion": "comparison", "comparrison": "comparison", "comparisions": "comparison",
}
# Headers containing one of these words take that name (source: `main_sections`).
MAIN_SECTIONS = ("impression", "findings", "history", "comparison", "addendum")
# Headers that describe the whole study count as findings (source: `p_findings`).
FINDINGS_LIKE = re.compile("(chest|portable|pa and lateral|lateral and pa|ap and lateral|lateral and ap|frontal and|"
                           "two views|frontal view|pa view|ap view|one view|lateral view|bone window|"
                           "frontal upright|frontal semi-upright|ribs|pa and lat)")


@dataclass(frozen=True)
class ReportSections:
    findings: str | None
    impression: str | None
    indication: str | None
    comparison: str | None

    @property
    def context(self) -> str | None:
        """Indication and comparison in the IU-Xray JSON's style: "Indication: ... Comparison: ..."."""
        parts = [f"Indication: {self.indication}" if self.indication else None,
                 f"Comparison: {self.comparison}" if self.comparison else None]
        text = " ".join(p for p in parts if p)
        return text or None


def normalise_header(header: str) -> str:
    name = header.lower().strip()
    if name in HEADER_NAMES:
        return HEADER_NAMES[name]
    for main in MAIN_SECTIONS:
        if main in name:
            return main
    return "findings" if FINDINGS_LIKE.search(name) else name


def split_sections(text: str) -> list[tuple[str, str]]:
    """[(normalised name, raw text)] in report order; a report without headers is one 'full report' section."""
    match = _HEADER.search(text)
    if match is None:
        return [("full report", text)]
    sections = [("preamble", text[: match.start(1)])]
    while match is not None:
        name, body_start = match.group(1), match.end()
        # Resume the search after the first newline of the body: a header-like phrase on the header's own line
        # is body text (upstream does the same "to avoid some bad parses").
        newline = text.find("\n", body_start)
        match = _HEADER.search(text, body_start + (newline - body_start if newline != -1 else 0))
        body_end = match.start() if match is not None else len(text)
        sections.append((normalise_header(name), text[body_start:body_end]))
    return [(name, body) for name, body in sections
            if not (name in ("findings", "impression") and not body.strip())]


def extract_sections(text: str) -> ReportSections:
    """Findings, impression, indication and comparison of one report; whitespace collapsed; None when absent."""
    last: dict[str, str] = {}
    for name, body in split_sections(text):
        last[name] = body  # the last section of a name wins
    return ReportSections(
        findings=clean_section(last.get("findings")),
        impression=clean_section(last.get("impression")),
        indication=clean_section(last.get("indication") or last.get("history")),
        comparison=clean_section(last.get("comparison")),
    )
