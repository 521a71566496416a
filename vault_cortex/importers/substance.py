"""Whether a captured exchange holds anything to keep, pure: "ok" → "Noted." is echo, not memory.

An exchange is left out only when neither side holds anything: the prompt is an acknowledgement or a bare
command ("ok", "thanks", "run the tests", "go on") and the answer says nothing the tool output did not already
say ("Done: I looked at the tool output.", the test summary read back). Anything that may be a question, a
decision, a fix or a fact keeps it: a question mark, a specific token the tools did not print (a number, a
path, a name in code), a preference ("never …", "from now on …"), or three words of its own on either side.
When in doubt, it is kept: a note too many costs a little ranking, a lost decision cannot be recalled.
"""

from __future__ import annotations

import re

PROMPT_WORDS = 3  # a prompt with this many words of its own (not filler) says something ("fix the failing test")
ANSWER_WORDS = 3  # so does an answer with this many the tools did not print ("The Pi runs Debian.")
_WORD = re.compile(r"[\w'’./\-]+")
_SPECIFIC = re.compile(r"\d|[_/\\]|\.\w|`|[a-z][A-Z]")  # a number, a path, a file, code, a camelCase name
_DECIDES = re.compile(r"\b(?:never|always|don'?t|do not|stop|avoid|prefer|instead|remember|must|should|from now on|"
                      r"call me|my name|i (?:like|want|need|use|am))\b", re.I)
# Words that carry no content of their own in an acknowledgement, a bare command or a report that it was done.
FILLER = frozenset("""
a an the and or but so to of in on at for with from by as is are was were be been it its it's this that these
those there here i i'm i've i'll me my we we'll you you're your yes yeah yep no nope not ok okay k sure fine
good great nice cool perfect thanks thank thx ty please pls alright right got understood noted done will do did
does doing can could would let's let go ahead on continue proceed next again now then just all also more same
looked look looks see seen saw checked check read ran run running tool tools output result results command
commands that's what which up out back into over have has had some any anything else know if when how well
sounds works worked working looks fine lgt lgtm
""".split())


def content_words(text: str) -> list[str]:
    """The words of a text that are not filler, lower-cased, trailing punctuation dropped."""
    words = (w.strip(".'’-").lower() for w in _WORD.findall(text))
    return [w for w in words if w and w not in FILLER]


def has_substance(prompt: str, answer: str, tool_output: str = "") -> bool:
    """Whether an exchange holds anything to keep (see the module's doc); `tool_output` is what its tools
    printed, which the answer may only read back."""
    return prompt_has_substance(prompt) or answer_has_substance(answer, tool_output)


def prompt_has_substance(prompt: str) -> bool:
    words = content_words(prompt)
    return ("?" in prompt or len(words) >= PROMPT_WORDS or _DECIDES.search(prompt) is not None
            or any(_SPECIFIC.search(w) for w in _WORD.findall(prompt)))


def answer_has_substance(answer: str, tool_output: str = "") -> bool:
    """An answer says something when it asks, or holds words or specific tokens its tools did not print."""
    if "?" in answer:
        return True
    printed = set(content_words(tool_output))
    new = [w for w in content_words(answer) if w not in printed]
    return len(new) >= ANSWER_WORDS or any(_SPECIFIC.search(w) for w in new)
