"""Every relative link in the Markdown a reader follows (README.md, docs/, demos/) reaches a file that
exists, and its #anchor, where it has one, a heading of that page (GitHub's anchor for it): a link
that lands nowhere is the first thing a learner trips over."""
import re
from pathlib import Path

import pytest

from support.paths import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "demos").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(page: Path) -> set:
    """GitHub's anchor of each heading: lower-cased, punctuation but - and _ dropped, spaces to -."""
    found, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        fenced ^= line.startswith("```")
        m = None if fenced else re.match(r"^#{1,6} (.+?)\s*$", line)
        if m:
            found.add(re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-"))
    return found


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_relative_links_reach_a_file_and_a_heading(page):
    broken = []
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)      # not inside code
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target):                                              # http:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading with that anchor in {file.relative_to(ROOT)}")
    assert not broken, "\n".join(broken)
