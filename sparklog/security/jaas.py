"""Kafka's JAAS configuration text (``sasl.jaas.config``): one login module and its options.

Contract:
- :func:`parse_jaas_config` reads ``<LoginModuleClass> <flag> key="value" ...;`` (Kafka's
  ``JaasConfig`` syntax: one module, flag ``required``/``requisite``/``sufficient``/``optional``,
  values quoted with ``"`` and ``\\`` escapes, or bare words) into a :class:`JaasModule`.
- Errors are :class:`ValueError` whose message names the problem but never echoes the text
  (it carries passwords).
- :data:`PLAIN_LOGIN_MODULE` and :data:`SCRAM_LOGIN_MODULE` are Kafka's class names; the PLAIN
  server reads ``user_<name>="<password>"`` options, clients read ``username``/``password``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_FLAGS = ("required", "requisite", "sufficient", "optional")


@dataclass(frozen=True, slots=True)
class JaasModule:
    login_module: str
    flag: str
    options: dict[str, str] = field(default_factory=dict, repr=False)

    def users(self) -> dict[str, str]:
        """PlainLoginModule's ``user_<name>`` options: user name -> password."""
        return {k[5:]: v for k, v in self.options.items() if k.startswith("user_") and k[5:]}


def _tokens(text: str) -> list[tuple[str, bool]]:
    """Words, ``=`` and ``;`` as (token, quoted) pairs."""
    out: list[tuple[str, bool]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in "=;":
            out.append((ch, False))
            i += 1
        elif ch == '"':
            i += 1
            value: list[str] = []
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                value.append(text[i])
                i += 1
            if i >= n:
                raise ValueError("sasl.jaas.config has an unterminated quoted value")
            i += 1
            out.append(("".join(value), True))
        else:
            start = i
            while i < n and not text[i].isspace() and text[i] not in '=;"':
                i += 1
            out.append((text[start:i], False))
    return out


def parse_jaas_config(text: str) -> JaasModule:
    tokens = _tokens(text)
    if len(tokens) < 3 or tokens[-1] != (";", False):
        raise ValueError("sasl.jaas.config must read '<LoginModule> required key=\"value\" ...;'")
    module, flag = tokens[0][0], tokens[1][0].lower()
    if flag not in _FLAGS:
        raise ValueError(f"sasl.jaas.config: login module control flag must be one of {_FLAGS}")
    options: dict[str, str] = {}
    body = tokens[2:-1]
    if len(body) % 3:
        raise ValueError("sasl.jaas.config: options must be key=value pairs")
    for index in range(0, len(body), 3):
        key, equals, value = body[index], body[index + 1], body[index + 2]
        if key[1] or equals != ("=", False) or (value[0] in ("=", ";") and not value[1]):
            raise ValueError("sasl.jaas.config: options must be key=value pairs")
        options[key[0]] = value[0]
    return JaasModule(module, flag, options)
