"""BookLibrary: a small library of invented books (generalisation suite).

Why invented titles and authors: a model cannot answer from memory, only by calling the
tools. Data (title: author, pages):
The Salt Road: Mira Okafor, 312; Glass Harbour: Mira Okafor, 248; Northern Lanterns:
Mira Okafor, 405; The Copper Orchard: Elias Brandt, 189; Winter Ledger: Elias Brandt, 276;
A Map of Small Rivers: Sofia Lindqvist, 354; Paper Comets: Sofia Lindqvist, 221;
The Quiet Engine: Sofia Lindqvist, 298; Ashes of Meridian: Dario Reyes, 430.
"""

from __future__ import annotations

from typing import Annotated, Literal

from localagent.tools.decorator import tool

Title = Literal[
    "The Salt Road",
    "Glass Harbour",
    "Northern Lanterns",
    "The Copper Orchard",
    "Winter Ledger",
    "A Map of Small Rivers",
    "Paper Comets",
    "The Quiet Engine",
    "Ashes of Meridian",
]
Author = Literal["Mira Okafor", "Elias Brandt", "Sofia Lindqvist", "Dario Reyes"]

BOOKS: dict[str, tuple[str, int]] = {
    "The Salt Road": ("Mira Okafor", 312),
    "Glass Harbour": ("Mira Okafor", 248),
    "Northern Lanterns": ("Mira Okafor", 405),
    "The Copper Orchard": ("Elias Brandt", 189),
    "Winter Ledger": ("Elias Brandt", 276),
    "A Map of Small Rivers": ("Sofia Lindqvist", 354),
    "Paper Comets": ("Sofia Lindqvist", 221),
    "The Quiet Engine": ("Sofia Lindqvist", 298),
    "Ashes of Meridian": ("Dario Reyes", 430),
}
AUTHORS: tuple[str, ...] = ("Mira Okafor", "Elias Brandt", "Sofia Lindqvist", "Dario Reyes")

TitleArg = Annotated[Title, "The book's title, e.g. The Salt Road."]
AuthorArg = Annotated[Author, "The author's full name, e.g. Mira Okafor."]


def _book(title: str) -> tuple[str, int]:
    if title not in BOOKS:
        raise ValueError(f"no book titled {title!r}; known titles: {', '.join(BOOKS)}")
    return BOOKS[title]


def _by(author: str) -> list[str]:
    if author not in AUTHORS:
        raise ValueError(f"no author named {author!r}; known authors: {', '.join(AUTHORS)}")
    return [title for title, (name, _) in BOOKS.items() if name == author]


class BookLibrary:
    """The books of a small library: pages, authors, and the books of each author."""

    @tool(name="GetPages")
    def get_pages(self, title: TitleArg) -> int:
        """Get the number of pages of a book."""
        return _book(title)[1]

    @tool(name="GetAuthor")
    def get_author(self, title: TitleArg) -> Author:
        """Get the name of the author who wrote a book."""
        return _book(title)[0]

    @tool(name="ListBooksBy")
    def list_books_by(self, author: AuthorArg) -> list[str]:
        """List the titles of the library's books written by an author."""
        return _by(author)

    @tool(name="CountBooksBy")
    def count_books_by(self, author: AuthorArg) -> int:
        """Count how many books by an author the library has."""
        return len(_by(author))
