"""Spark's datetime patterns (``date_format``, ``to_timestamp``...: Java ``DateTimeFormatter`` letters) split
into fields and literals, so a pattern deltalog does not format or parse exactly is refused when it is
bound, by letter, rather than read differently."""

from __future__ import annotations

from dataclasses import dataclass

#: letters deltalog formats and parses: year, month, day of month / year, hours, minutes, seconds, fraction,
#: day of week, am/pm, quarter, zone name, offsets, zone id
SUPPORTED = set("yMLdDHhkKmsSEaQqzZXxV")
_RESERVED = set("[]{}#")


@dataclass(frozen=True)
class Token:
    """``letter`` repeated ``count`` times, or a literal (``letter`` empty, ``text`` the characters)."""

    letter: str
    count: int = 0
    text: str = ""


class PatternError(ValueError):
    def __init__(self, message: str, letter: str = "") -> None:
        super().__init__(message)
        self.letter = letter


def tokens(pattern: str) -> tuple[Token, ...]:
    """The fields and literals of ``pattern``; :class:`PatternError` for a letter outside :data:`SUPPORTED`
    or an unclosed quote."""
    out: list[Token] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            if pattern[i + 1 : i + 2] == "'":
                out.append(Token("", text="'"))
                i += 2
                continue
            end = i + 1
            text = []
            while True:
                if end >= len(pattern):
                    raise PatternError(f"the pattern {pattern!r} has an unclosed quote")
                if pattern[end] == "'":
                    if pattern[end + 1 : end + 2] == "'":
                        text.append("'")
                        end += 2
                        continue
                    break
                text.append(pattern[end])
                end += 1
            out.append(Token("", text="".join(text)))
            i = end + 1
            continue
        if c.isascii() and c.isalpha():
            if c not in SUPPORTED:
                raise PatternError(f"the pattern letter {c!r} in {pattern!r} is not one deltalog formats", c)
            j = i
            while j < len(pattern) and pattern[j] == c:
                j += 1
            count = j - i
            if (c in "dHhkKms" and count > 2) or (c == "S" and count > 9) or (c in "MLQqE" and count > 5):
                raise PatternError(f"{c * count} in {pattern!r} is too many letters {c!r}", c)
            out.append(Token(c, count))
            i = j
            continue
        if c in _RESERVED:
            raise PatternError(f"{c!r} in the pattern {pattern!r} is reserved for future use", c)
        out.append(Token("", text=c))
        i += 1
    return tuple(out)


__all__ = ["SUPPORTED", "PatternError", "Token", "tokens"]
