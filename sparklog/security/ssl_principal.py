"""``ssl.principal.mapping.rules``: an mTLS client's principal name from its certificate's DN.

Contract (Kafka's SslPrincipalMapper): the rules are a comma-separated list of ``DEFAULT`` (the
DN unchanged) and ``RULE:<pattern>/<replacement>/[L|U]``. The first rule whose pattern matches
the whole DN gives the name: every match of the pattern in the DN is replaced (``$n`` refers to
a group; a ``$n`` beyond the groups is literal), then lower- or upper-cased. No rule matching is
:class:`NoMatchingRule`, which fails the connection's authentication. A malformed rule list is
a ``ValueError`` at start-up. The DN is RFC 2253/4514 text, most specific RDN first
(``CN=alice,OU=eng,O=org``), as Java's ``X500Principal.getName()`` prints it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_PARSER = re.compile(_RULE)
_BACK_REFERENCE = re.compile(r"\$(\d+)")


class NoMatchingRule(Exception):
    """No mapping rule applies to the certificate's DN."""


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    lower: bool = False
    upper: bool = False

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        result = self.pattern.sub(_python_replacement(self.replacement, self.pattern.groups), dn)
        if self.lower:
            return result.lower()
        if self.upper:
            return result.upper()
        return result


def _python_replacement(java: str, groups: int) -> str:
    """A Java replacement string (``$1``, ``\\$``) as a Python ``re.sub`` template."""
    out: list[str] = []
    i = 0
    while i < len(java):
        ch = java[i]
        if ch == "\\" and i + 1 < len(java):
            out.append(java[i + 1].replace("\\", "\\\\"))
            i += 2
            continue
        match = _BACK_REFERENCE.match(java, i) if ch == "$" else None
        if match is not None:
            digits = match.group(1)
            index = int(digits)
            used = len(digits)
            while index > groups and index >= 10:
                index //= 10
                used -= 1
            if index <= groups:
                out.append(f"\\g<{index}>")
                i += 1 + used
                continue
            out.append("$")
            i += 1
            continue
        out.append("\\\\" if ch == "\\" else ch)
        i += 1
    return "".join(out)


class SslPrincipalMapper:
    """The parsed rule list; :meth:`name` maps one DN."""

    def __init__(self, rules: str | None) -> None:
        text = (rules or "DEFAULT").strip()
        self._rules: list[_Rule] = []
        position = 0
        for match in _SPLITTER.finditer(text):
            if match.start() != position:
                raise ValueError("ssl.principal.mapping.rules: invalid rule list")
            position = match.end()
            rule = match.group(1)
            parsed = _PARSER.match(rule)
            if parsed is None or parsed.end() != len(rule):
                raise ValueError(f"ssl.principal.mapping.rules: invalid rule {rule!r}")
            if parsed.group(1) is not None:
                self._rules.append(_Rule(None))
            elif parsed.group(2) is not None:
                try:
                    pattern = re.compile(parsed.group(2))
                except re.error as exc:
                    raise ValueError(f"ssl.principal.mapping.rules: {exc}") from None
                flag = parsed.group(6)
                self._rules.append(_Rule(pattern, parsed.group(4), flag == "L", flag == "U"))
            if position >= len(text):
                break

    def name(self, dn: str) -> str:
        for rule in self._rules:
            result = rule.apply(dn)
            if result is not None:
                return result
        raise NoMatchingRule(f"No rules apply to {dn}")
