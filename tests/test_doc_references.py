"""The design of record is inside the repository: every pointer to a document, from code, tests or docs, reaches a
file (and, where it names one, a section) that this checkout has. Before, nine modules pointed at a DESIGN.md that
was not in the repository, among them the trust-boundary contract that disclosure and validation cite."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The reference of official definitions and constants laid beside the checkout (the tests read it too): code may cite
# it as a source ("METRICS.md", "reference/METRICS.md"). The background design notes there are not the design of
# record: nothing may point to them (docs/architecture.md is).
SHARED_REFERENCE = REPO.parent / "shared" / "reference"
NOT_OURS = {"DESIGN.md"}

# `docs/harness.md, "Validation"` or `docs/architecture.md, "Trust boundaries"`: a document and, optionally, a section.
_POINTER = re.compile(r"\b((?:docs/)?[A-Za-z_]+\.md)(?:,\s*\"([^\"]+)\")?")
# A relative Markdown link in a document: [text](target) or [text](target#anchor).
_LINK = re.compile(r"\]\((?!https?://|mailto:|#)([^)#\s]+)(?:#[^)\s]*)?\)")


def _tracked(*patterns: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", *patterns], cwd=REPO, capture_output=True, text=True, check=True)
    return [REPO / line for line in out.stdout.splitlines() if (REPO / line).is_file()]


def _headings(doc: Path) -> set[str]:
    return {m.group(1).strip() for m in re.finditer(r"^#+\s+(.+)$", doc.read_text(), re.MULTILINE)}


def test_no_file_points_to_a_document_outside_the_repository():
    missing = []
    for path in _tracked("src", "tests", "bench", "scripts", "docs", "README.md", "metrics", "spaces"):
        if path.suffix not in (".py", ".md", ".sh", ".txt") or path == Path(__file__):
            continue
        for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for match in _POINTER.finditer(line):
                name, section = match.groups()
                if "/" not in name and not name.split(".")[0].isupper():
                    continue  # a bare lower-case name is a file named in prose (results.md, meta_eval.md outputs)
                doc = REPO / name if "/" in name else (path.parent / name if (path.parent / name).exists()
                                                       else REPO / name)
                where = f"{path.relative_to(REPO)}:{lineno}"
                if Path(name).name in NOT_OURS:
                    missing.append(f"{where}: {name} is not in the repository (the design of record is "
                                   "docs/architecture.md)")
                    continue
                if not doc.exists() and (SHARED_REFERENCE / Path(name).name).exists():
                    doc = SHARED_REFERENCE / Path(name).name  # a cited source, see SHARED_REFERENCE
                if not doc.exists():
                    missing.append(f"{where}: {name} is not in the repository")
                elif section and doc.is_relative_to(REPO) and not any(h == section or h.startswith(section + " (") for h in _headings(doc)):
                    missing.append(f"{where}: {name} has no section {section!r}")
    assert not missing, "\n".join(missing)


def test_every_relative_link_in_the_docs_reaches_a_file():
    broken = []
    for doc in _tracked("docs", "README.md", "tests/README.md"):
        if doc.suffix != ".md":
            continue
        for target in _LINK.findall(doc.read_text()):
            if not (doc.parent / target).exists():
                broken.append(f"{doc.relative_to(REPO)}: ({target})")
    assert not broken, "\n".join(broken)


def test_the_architecture_document_states_the_trust_boundaries():
    """The contract the privacy code cites exists, and names each boundary's owner as a file that exists."""
    text = (REPO / "docs" / "architecture.md").read_text()
    assert "Trust boundaries" in _headings(REPO / "docs" / "architecture.md")
    section = text.split("## Trust boundaries", 1)[1].split("\n## ", 1)[0]
    owners = set(re.findall(r"`((?:generate|evaluation|leaderboard|data|metrics)/[\w/]+\.py)", section))
    assert len(owners) >= 6
    for owner in owners:
        assert (REPO / "src" / "rexrank" / owner).exists(), owner
