"""The reports' Markdown, as HTML: the small subset ``archdb.reports.render`` writes.

Headings, paragraphs, bullet lists, GitHub tables, images, links, `code`, **bold** and
*italics*, and the claim anchors (``<a id="claim-N"></a>``). Every character of the text is
HTML-escaped first and only then is markup added, so card text quoted in a report (names,
ids, notes) is always shown as text. Links go to the site's own pages (``adoption.md`` ->
``adoption.html``), figures, or http(s) addresses; anything else stays plain text.

Line by line and one regular expression per inline construct, none with nested
quantifiers: linear in the page's length.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from html import escape

_ANCHOR = re.compile(r'^<a id="(claim-\d+)"></a>$')
_HEADING = re.compile(r"^(#{1,4}) (.*)$")
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*([^*]+)\*\*")
_ITALIC = re.compile(r"\*([^*]+)\*")
_PAGE_LINK = re.compile(r"^([a-z0-9-]+)\.md(#[a-z0-9-]+)?$|^(#[a-z0-9-]+)$")
_FIGURE = re.compile(r"^figures/[a-z0-9-]+\.svg$")
_WEB = re.compile(r"^https?://\S+$")

# report page -> site page
PAGE_NAMES = {
    "README": "trends",
    "adoption": "adoption",
    "distributions": "distributions",
    "analyses": "analyses",
    "families": "families",
    "claims": "claims",
    "mechanisms": "mechanisms",
    "fidelity": "fidelity",
}

CodeLinker = Callable[[str], str | None]  # `text` -> href (a card page) or None


def to_html(markdown: str, link_code: CodeLinker = lambda _: None) -> str:
    """The HTML body of one report page (the page's title included, as <h1>)."""
    out: list[str] = []
    lines = markdown.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.startswith("<!--"):
            i += 1
        elif anchor := _ANCHOR.match(line):
            out.append(f'<span id="{anchor.group(1)}" class="anchor"></span>')
            i += 1
        elif heading := _HEADING.match(line):
            level = len(heading.group(1))
            text = _inline(heading.group(2), link_code)
            out.append(f"<h{level}>{text}</h{level}>")
            i += 1
        elif line.startswith("|"):
            block, i = _take(lines, i, lambda s: s.startswith("|"))
            out.append(_table(block, link_code))
        elif line.startswith("- "):
            block, i = _take(lines, i, lambda s: s.startswith("- "))
            items = "".join(f"<li>{_inline(b[2:], link_code)}</li>" for b in block)
            out.append(f"<ul>{items}</ul>")
        else:
            block, i = _take(lines, i, _plain)
            out.append(f"<p>{_inline(' '.join(block), link_code)}</p>")
    return "\n".join(out) + "\n"


def _plain(line: str) -> bool:
    starts = ("|", "- ", "<!--", "#")
    return bool(line.strip()) and not line.startswith(starts) and not _ANCHOR.match(line)


def _take(lines: list[str], i: int, keep: Callable[[str], bool]) -> tuple[list[str], int]:
    block = []
    while i < len(lines) and keep(lines[i]):
        block.append(lines[i])
        i += 1
    return block, i


def _cells(row: str) -> list[str]:
    """A table row's cells; ``\\|`` is a literal bar inside a cell."""
    inner = row.strip()[1:-1]
    return [c.strip().replace("\0", "|") for c in inner.replace("\\|", "\0").split("|")]


def _table(rows: list[str], link_code: CodeLinker) -> str:
    headers = _cells(rows[0])
    aligns = ["num" if a.strip().endswith(":") else "" for a in _cells(rows[1])]
    head = "".join(f"<th>{_inline(h, link_code)}</th>" for h in headers)
    body = []
    for row in rows[2:]:
        cells = _cells(row)
        body.append(
            "<tr>"
            + "".join(
                f'<td class="{a}">{_inline(c, link_code)}</td>'
                if a
                else f"<td>{_inline(c, link_code)}</td>"
                for c, a in zip(cells, aligns, strict=False)
            )
            + "</tr>"
        )
    return (
        '<div class="scroll"><table class="report">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _inline(text: str, link_code: CodeLinker) -> str:
    """Escape, then add inline markup. Code spans are set aside first, so their text is
    never read as emphasis or links."""
    codes: list[str] = []
    text = text.replace("\0", "")  # the placeholder mark below; never real text

    def keep_code(m: re.Match[str]) -> str:
        raw = m.group(1)
        href = link_code(raw)
        shown = f"<code>{escape(raw)}</code>"
        codes.append(f'<a href="{escape(href)}">{shown}</a>' if href else shown)
        return f"\0{len(codes) - 1}\0"

    text = _CODE.sub(keep_code, text)
    text = escape(text, quote=True)
    text = _IMAGE.sub(_image, text)
    text = _LINK.sub(_link, text)
    text = _BOLD.sub(r"<strong>\1</strong>", text)
    text = _ITALIC.sub(r"<em>\1</em>", text)
    return re.sub(r"\0(\d+)\0", lambda m: codes[int(m.group(1))], text)


def site_href(target: str) -> str | None:
    """Where a report link points on the site, or None for a target it does not allow."""
    target = target.replace("&amp;", "&")
    page = _PAGE_LINK.match(target)
    if page:
        if page.group(3):
            return page.group(3)
        name = PAGE_NAMES.get(page.group(1))
        return None if name is None else f"{name}.html{page.group(2) or ''}"
    if _FIGURE.match(target) or _WEB.match(target):
        return target
    return None


def _image(m: re.Match[str]) -> str:
    src = site_href(m.group(2))
    if src is None or not src.startswith("figures/"):
        return m.group(0)
    return f'<figure><img src="{escape(src)}" alt="{m.group(1)}"></figure>'


def _link(m: re.Match[str]) -> str:
    href = site_href(m.group(2))
    if href is None:
        return m.group(0)
    return f'<a href="{escape(href)}">{m.group(1)}</a>'


def pages(markdown_pages: Iterable[tuple[str, str]], link_code: CodeLinker) -> dict[str, str]:
    """Report pages (file name, Markdown) as site pages (file name, HTML body)."""
    out = {}
    for name, text in markdown_pages:
        stem = name.removesuffix(".md")
        if stem in PAGE_NAMES:
            out[f"{PAGE_NAMES[stem]}.html"] = to_html(text, link_code)
    return out
