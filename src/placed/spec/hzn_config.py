"""hzn's configuration files and its `$VAR` substitution (issue 38), as anax's
`cli/cliconfig/config.go` and `cli/cliutils/cliutils.go` do them.

Every file hzn reads with `ReadJsonFileWithLocalConfig` (service publish, deployment
addpolicy, service addpolicy, pattern publish, deploycheck, register) has its `/* */`
comments removed and then `$VAR` and `${VAR}` replaced as Go's `os.Expand` does
(`cliutils.ReadJsonFile`, `ExpandEnv`), unless `HZN_DONT_SUBST_ENV_VARS` is "1". The values
are the environment's, which hzn first fills from its configuration files without ever
overriding a variable the environment has (`SetEnvVars` with `override_env` false):

1. the environment itself;
2. the user's `~/.hzn/hzn.json`, then `/etc/default/horizon` (KEY=VALUE lines), then the
   package's `/etc/horizon/hzn.json` (`/usr/local/etc/horizon/hzn.json` on macOS):
   `SetEnvVarsFromConfigFiles` reads the package's first, then the others, each compared
   with the environment as it was before any of them, so a later one wins over an earlier;
3. the project's `hzn.json` (`SetEnvVarsFromProjectConfigFile`), which only fills what is
   still unset. hzn finds it from the directory it runs in: `./hzn.json` beside a
   `./service.definition.json`, else `./horizon/hzn.json` beside
   `./horizon/service.definition.json` (`GetProjectConfigFile`). placed takes the hzn.json in
   the folder of the files it reads: that file, for hzn run from the project as the
   examples' Makefiles run it. (`ReadJsonFileWithLocalConfig` means to read the hzn.json
   beside each file too, but its test has been inverted since anax b482d700, 2019: it reads
   that file only when it does not exist.)

In each hzn.json the `HZN_*` settings (struct `HorizonCliConfig`) and the `MetadataVars`
map are both set, the `HZN_*` ones last. A variable none of these defines is replaced by
"" as hzn replaces it (hzn warns, `ExpandMapping`); placed names it, and where hzn would
have looked, in the error that follows (a version that is not a version) and in a warning.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from placed.spec.errors import Problem, SourcePosition, SpecError, quoted
from placed.spec.hzn_keys import CONFIG, unknown_keys_of
from placed.spec.source import SourceMap, decode, dotted, offset_position

CONFIG_NAME = "hzn.json"
# The settings HorizonCliConfig holds besides MetadataVars (cli/cliconfig/config.go), as
# their json tags spell them.
HZN_SETTINGS = (
    "HZN_EXCHANGE_USER_AUTH",
    "HZN_EXCHANGE_NODE_AUTH",
    "HZN_ORG_ID",
    "HZN_LANG",
    "HORIZON_URL",
    "HZN_EXCHANGE_URL",
    "HZN_HTTP_RETRIES",
    "HZN_HTTP_RETRY_INTERVAL",
    "HZN_FSS_CSSURL",
    "HZN_AGBOT_URL",
    "HZN_PRIVATE_KEY_FILE",
    "HZN_PUBLIC_KEY_FILE",
    "HZN_DEVICE_ID",
    "HZN_NODE_ID",
    "HZN_PATTERN",
    "HZN_DEV_FSS_IMAGE_REPO",
    "HZN_DEV_FSS_IMAGE_TAG",
    "HZN_DEV_FSS_CSS_PORT",
    "HZN_DEV_FSS_MONGO_IMAGE",
    "HZN_DEV_FSS_WORKING_DIR",
    "HZN_REGISTER_HTTP_TIMEOUT",
)
METADATA_VARS = "MetadataVars"
DONT_SUBSTITUTE = "HZN_DONT_SUBST_ENV_VARS"
MAX_CONFIG_BYTES = 1024 * 1024  # an hzn.json is a few lines

# The files hzn reads before the project's, in the order SetEnvVarsFromConfigFiles reads
# them (a later one wins). Tests point these elsewhere.
PACKAGE_CONFIG = Path(
    "/usr/local/etc/horizon/hzn.json" if sys.platform == "darwin" else "/etc/horizon/hzn.json"
)
DEFAULTS_FILE = Path("/etc/default/horizon")
_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)


@dataclass(frozen=True)
class Setting:
    value: str
    origin: str  # where the value comes from, as a message names it


@dataclass(frozen=True)
class Variables:
    """What `$NAME` is in one folder's files: each defined name's value and origin, and
    every place hzn looks, in the order that decides."""

    settings: Mapping[str, Setting]
    looked: tuple[str, ...]

    @property
    def substitutes(self) -> bool:
        found = self.settings.get(DONT_SUBSTITUTE)
        return found is None or found.value != "1"

    def where_looked(self) -> str:
        return ", ".join(self.looked)


class Configuration:
    """hzn's configuration files outside the project, read once; `for_folder` adds a
    folder's own hzn.json."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.environ = dict(os.environ if environ is None else environ)
        self.home = self.environ.get("HOME", "")
        user = Path(self.home) / ".hzn" / CONFIG_NAME if self.home else None
        # SetEnvVarsFromConfigFiles: package, /etc/default/horizon, then the user's; each
        # sets what the original environment lacks, so the last to set a name wins.
        self.files: dict[str, Setting] = {}
        self.looked = ["the environment"]
        for path, reader in (
            (user, self._settings),
            (DEFAULTS_FILE, self._defaults),
            (PACKAGE_CONFIG, self._settings),
        ):
            if path is None:
                continue
            self.looked.append(self.shown(path))
            for name, setting in reader(path).items():
                self.files.setdefault(name, setting)

    def shown(self, path: Path) -> str:
        """A path as messages name it: the user's home as ~."""
        home = self.home.rstrip("/")
        text = str(path)
        return "~" + text[len(home) :] if home and text.startswith(home + "/") else text

    def _settings(self, path: Path) -> dict[str, Setting]:
        # Files placed was not given: keys hzn ignores are ignored here too.
        return config_settings(path, self.shown(path), strict=False)

    def _defaults(self, path: Path) -> dict[str, Setting]:
        return _defaults_settings(path, self.shown(path))

    def for_folder(self, folder: Path) -> Variables:
        settings = {name: Setting(value, "the environment") for name, value in self.environ.items()}
        for name, setting in self.files.items():
            settings.setdefault(name, setting)
        project = folder / CONFIG_NAME
        for name, setting in config_settings(project, str(project)).items():
            settings.setdefault(name, setting)
        return Variables(settings, (*self.looked, str(project)))


def config_settings(path: Path, shown: str, strict: bool = True) -> dict[str, Setting]:
    """The names an hzn.json sets (GetVarsFromFile): none when it does not exist; its
    MetadataVars and then its HZN_* settings (SetEnvVarsFromConfigFile sets them in that
    order, so a setting wins over a MetadataVars entry of the same name)."""
    data, text = _read_config(path)
    if data is None:
        return {}
    source = str(path)
    problems: list[Problem] = []
    sources = SourceMap(text=text)
    found: dict[str, Setting] = {}
    metadata = data.get(METADATA_VARS)
    if metadata is not None and not isinstance(metadata, dict):
        position = sources.value((METADATA_VARS,))
        problems.append(Problem("expected an object of names and texts", METADATA_VARS, position))
    elif metadata:
        for name, value in metadata.items():
            if not isinstance(value, str):
                # json.Unmarshal into map[string]string fails, and hzn stops: "Unable to
                # decode content of config file".
                position = sources.value((METADATA_VARS, name))
                problems.append(
                    Problem(
                        f"expected a text, got {quoted(value)} (hzn cannot read this file)",
                        f"{METADATA_VARS}.{name}",
                        position,
                    )
                )
            else:
                found[name] = Setting(value, f"{shown} ({METADATA_VARS})")
    for name in HZN_SETTINGS:
        value = data.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            position = sources.value((name,))
            message = f"expected a text, got {quoted(value)} (hzn cannot read this file)"
            problems.append(Problem(message, name, position))
        elif value:  # GetVarsFromConfig skips empty settings
            found[name] = Setting(value, shown)
    if strict:
        # hzn ignores a key HorizonCliConfig lacks, and so the variable it meant to set;
        # in a file placed was given, that is an error with a did-you-mean.
        problems.extend(
            Problem(message, dotted(path), sources.key(path))
            for message, path in unknown_keys_of(CONFIG, data)
        )
    if problems:
        raise SpecError(source, problems)
    return found


def _read_config(path: Path) -> tuple[dict[str, Any] | None, str]:
    source = str(path)
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None, ""
    except OSError as error:
        raise SpecError(source, [Problem(f"cannot read: {error.strerror or error}")]) from None
    if len(raw) > MAX_CONFIG_BYTES:
        message = f"is larger than {MAX_CONFIG_BYTES} bytes; an hzn.json is a few lines"
        raise SpecError(source, [Problem(message)])
    # GetConfig removes /* */ comments, as every file hzn reads; blanking them keeps
    # lines and columns.
    text = blank_comments(decode(raw, source))
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        position = SourcePosition(error.lineno, error.colno)
        problem = Problem(f"not valid JSON: {error.msg} (hzn cannot read this file)", "", position)
        raise SpecError(source, [problem]) from None
    except RecursionError:
        raise SpecError(source, [Problem("nests too deeply")]) from None
    if not isinstance(data, dict):
        problem = Problem("expected an object of hzn settings and MetadataVars", "")
        raise SpecError(source, [problem])
    return data, text


def _defaults_settings(path: Path, shown: str) -> dict[str, Setting]:
    """/etc/default/horizon as GetConfigFromNonJsonFile reads it: KEY=VALUE lines, `#`
    lines skipped, the value being what lies between the first and the second `=`."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except OSError as error:
        raise SpecError(str(path), [Problem(f"cannot read: {error.strerror or error}")]) from None
    found: dict[str, Setting] = {}
    for line in raw[:MAX_CONFIG_BYTES].decode("utf-8", errors="replace").splitlines():
        if re.match(r"^\s*#", line):
            continue
        parts = line.split("=")
        key = parts[0].strip()
        if key:
            found[key] = Setting(parts[1].strip() if len(parts) > 1 else "", shown)
    return found


def blank_comments(text: str) -> str:
    """`/* */` comments removed as hzn removes them, blanked rather than deleted so that
    every line and column stays where it was."""
    return _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)


# -- substitution -----------------------------------------------------------------------


@dataclass(frozen=True)
class Substitution:
    name: str
    written: tuple[int, int]  # where `$NAME` stands in the text as written
    at: tuple[int, int]  # where its value stands in the substituted text
    setting: Setting | None  # None: defined nowhere hzn looks, so ""

    @property
    def reference(self) -> str:
        return f"${self.name}"


@dataclass(frozen=True)
class Expanded:
    """A text after substitution, with the way back to the text as written."""

    written: str
    text: str
    substitutions: tuple[Substitution, ...] = ()
    variables: Variables | None = None
    _starts: list[int] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        self._starts.extend(s.at[0] for s in self.substitutions)

    def written_offset(self, offset: int) -> int:
        """Where character `offset` of the substituted text was written: inside a value,
        the `$` that produced it."""
        index = bisect.bisect_right(self._starts, offset) - 1
        if index < 0:
            return offset
        found = self.substitutions[index]
        if offset < found.at[1]:
            return found.written[0]
        return offset - found.at[1] + found.written[1]

    def written_position(self, position: SourcePosition | None) -> SourcePosition | None:
        if position is None or not self.substitutions:
            return position
        offset = text_offset(self.text, position)
        return offset_position(self.written, self.written_offset(offset))

    def within(self, start: int, end: int) -> list[Substitution]:
        """The substitutions whose values begin in [start, end) of the substituted text."""
        low = bisect.bisect_left(self._starts, start)
        high = bisect.bisect_left(self._starts, end)
        return list(self.substitutions[low:high])

    def undefined(self) -> list[str]:
        """Each name substituted by "" because nothing defines it, once, in order."""
        return list(dict.fromkeys(s.name for s in self.substitutions if s.setting is None))

    def describe(self, found: list[Substitution]) -> str:
        """How a value came to be: each variable, its value and where it comes from, or
        where hzn looked for it in vain."""
        parts = []
        for name in dict.fromkeys(s.name for s in found):
            setting = next(s.setting for s in found if s.name == name)
            if setting is None:
                looked = self.variables.where_looked() if self.variables else "the environment"
                parts.append(
                    f"${name} is defined nowhere hzn looks ({looked}), so hzn substitutes "
                    '"" as placed did'
                )
            else:
                parts.append(f"${name} is {quoted(setting.value)} from {setting.origin}")
        return "; ".join(parts)


def text_offset(text: str, position: SourcePosition) -> int:
    """The character offset of a line and column of `text`."""
    line_start = 0
    for _ in range(position.line - 1):
        found = text.find("\n", line_start)
        if found < 0:
            break
        line_start = found + 1
    return min(line_start + position.column - 1, len(text))


def expand(text: str, variables: Variables) -> Expanded:
    """`text` with `$NAME`, `${NAME}` and the shell's one-character names (`$1`, `$$`)
    replaced exactly as Go's os.Expand replaces them: `${}` and an unclosed `${` are
    dropped, a `$` followed by nothing it can name stays."""
    if "$" not in text or not variables.substitutes:
        return Expanded(text, text, (), variables)
    out: list[str] = []
    substitutions: list[Substitution] = []
    length = 0  # of the output so far
    i = 0
    j = 0
    while j < len(text):
        if text[j] == "$" and j + 1 < len(text):
            out.append(text[i:j])
            length += j - i
            name, width = _shell_name(text, j + 1)
            if name == "" and width > 0:
                pass  # invalid syntax: os.Expand eats the characters
            elif name == "":
                out.append("$")  # a $ that names nothing stays
                length += 1
            else:
                setting = variables.settings.get(name)
                value = setting.value if setting is not None else ""
                substitutions.append(
                    Substitution(name, (j, j + 1 + width), (length, length + len(value)), setting)
                )
                out.append(value)
                length += len(value)
            j += width
            i = j + 1
        j += 1
    out.append(text[i:])
    return Expanded(text, "".join(out), tuple(substitutions), variables)


def _is_special(char: str) -> bool:
    return char in "*#$@!?-0123456789"


def _is_name_char(char: str) -> bool:
    return char == "_" or ("0" <= char <= "9") or ("a" <= char <= "z") or ("A" <= char <= "Z")


def _shell_name(text: str, start: int) -> tuple[str, int]:
    """Go's getShellName on text[start:]: (the name, how many characters it spans)."""
    rest = len(text) - start
    if text[start] == "{":
        if rest > 2 and _is_special(text[start + 1]) and text[start + 2] == "}":
            return text[start + 1], 3
        close = text.find("}", start + 1)
        if close < 0:
            return "", 1  # bad syntax; eat "${"
        if close == start + 1:
            return "", 2  # bad syntax; eat "${}"
        return text[start + 1 : close], close - start + 1
    if _is_special(text[start]):
        return text[start], 1
    end = start
    while end < len(text) and _is_name_char(text[end]):
        end += 1
    return text[start:end], end - start
