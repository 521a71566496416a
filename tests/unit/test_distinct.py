"""What is distinctive in a note: template lines stripped, words weighed by how few notes use them."""

from __future__ import annotations

from vault_cortex.sleep.distinct import (
    BOILERPLATE_NOTES,
    TEMPLATE_LINES,
    Distinct,
    content_lines,
    shared_neighbours,
    words,
)

SKELETON = """%% ----- Do not edit this section ----- %%
Plugin ID: `{id}`
Links: [GitHub repository](https://github.com/{author}/{id}) or [Open in Obsidian](obsidian://show-plugin?id={id})
Developed by: [[{author}]]
Mobile compatible: [[Mobile-compatible plugins|Yes]]

{text}

%% ----- Do not edit anything above this line ----- %%
# This note in GitHub
[Edit In GitHub](https://github.dev/hub/blob/main/{id}.md) | [Download this vault](https://github.com/hub/main.zip)
"""
PLUGINS = {f"Plugins/{i}.md": (name, SKELETON.format(id=i, author=a, text=t)) for i, name, a, t in (
    ("calendar", "Calendar", "mira", "Shows a small month calendar in the sidebar."),
    ("tags", "Tag Tools", "jdoe", "Rename and merge tags from the tag pane."),
    ("kanban", "Kanban", "osei", "Turns a list into a board of cards."),
    ("sprint", "Word Sprint", "lucia", "Counts the words written in a timed sprint."),
    ("pdf", "PDF Highlights", "tanaka", "Extracts the highlights of a PDF into a note."))}
NOTES = PLUGINS | {
    "SD card died.md": ("SD card died", "The SD card in the greenhouse Pi died after 18 months of writes."),
    "SD card again.md": ("SD card again", "After 18 months of constant writes the greenhouse Pi's SD card died."),
    "Compost.md": ("Compost", "The compost bins are turned on the first Saturday of each month."),
}


def test_lines_written_in_many_notes_are_template_and_stripped() -> None:
    d = Distinct(NOTES)
    assert {"mobile compatible: [[mobile-compatible plugins|yes]]", "# this note in github"} <= d.boilerplate
    assert "developed by: [[mira]]" not in d.boilerplate  # one author's line is that page's own
    page = d.body["Plugins/calendar.md"]
    assert "Mobile compatible" not in page and "GitHub" not in page
    assert "month calendar" in page and "Developed by: [[mira]]" in page
    assert BOILERPLATE_NOTES > 3  # a duplicate, or a duplicate and its correction, never strip each other


def test_template_pages_share_little_and_a_paraphrase_shares_most() -> None:
    d = Distinct(NOTES)
    pages = sorted(PLUGINS)
    assert max(d.evidence(a, b).overlap for a in pages for b in pages if a < b) < 0.25
    same = d.evidence("SD card died.md", "SD card again.md")
    assert same.overlap >= 0.7 and {"card", "greenhouse", "18", "months"} <= set(same.shared)
    assert d.evidence("SD card died.md", "Compost.md").overlap == 0.0
    assert d.evidence(pages[0], pages[1]).template >= TEMPLATE_LINES > same.template == 0  # pages of one template
    # a short page naming a long one is not the same thing: overlap is over the larger note's words
    short = Distinct(NOTES | {"People/mira.md": ("mira", "Author of [[calendar|Calendar]].")})
    assert short.evidence("People/mira.md", "Plugins/calendar.md").overlap < 0.35


def test_words_and_lines_leave_out_addresses_comments_and_stop_words() -> None:
    assert content_lines("a %% hidden %% b\n<!--\nx\n-->\n[site](https://x.org/y) <https://z.org>\n\n") == \
        ["a   b", "[site]  "]
    assert words("The Pi's SD card, and the Pi") == {"pi", "sd", "card"}


def test_a_link_path_goes_through_a_note_that_is_not_a_hub() -> None:
    degree = {"Author.md": 3, "Mobile-compatible plugins.md": 900}
    assert shared_neighbours(["Author.md", "Mobile-compatible plugins.md"], ["Author.md",
                             "Mobile-compatible plugins.md"], degree, 8) == ["Author.md"]
    assert shared_neighbours(["Mobile-compatible plugins.md"], ["Mobile-compatible plugins.md"], degree, 8) == []
