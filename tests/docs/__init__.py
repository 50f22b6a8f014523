"""README.md and the pages in docs/ and demos/ held to the repository: links reach files and headings,
README's examples run and its commands exist."""
