"""The goal in English, written by the planning model, as one more query for the tool filter.

Why: the bundled embedding model (all-MiniLM-L6-v2) was trained on English text, so a goal
in another language ranks the functions it needs low, and a function that is not offered
cannot be planned with. Measured with `scripts/bench_offer.py --translate` on the
multilingual suite (every task the benchmark filters; a task counts when every function of
its reference plan is offered): goal alone de 31/47, es 36/47, fr 38/47, zh 32/47, the
English phrasings 141/141; goal and its translation de 43, es 46, fr 46, zh 45, English
141/141 (none lost). The planning model (Qwen2.5 reads these languages) writes the
translation; the filter searches with the goal *and* the translation, a function scoring its
best similarity to either, so an English goal (translated to itself) keeps its offer.

Contract: nothing here reads a word of any language; the model translates, from a fixed
few-shot prompt (examples in German, Chinese, English and Spanish on topics that no suite
has, the English one left as it is). Greedy, one line, at most `MAX_TOKENS` tokens;
an empty or cut reply, or the goal itself, adds no query. The translation is only a
query: planners still plan from the goal as the user wrote it, so values stay verbatim.
One translation per distinct goal per `QueryTranslator` (a chat asking again does not
pay again). The call runs beside the model's KV cache (`LLM.aside`), so the planner's
cached prompt prefix survives it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from localagent.llm.base import LLM, Message

MAX_TOKENS = 64
SYSTEM = "Translate the user's text into English. Do not answer it; reply with the English text only."
# (text, its English): one a language, the English one unchanged, none from any suite
EXAMPLES: tuple[tuple[str, str], ...] = (
    ("Wie viele Stühle passen in den grünen Saal?", "How many chairs fit in the green hall?"),
    ("给Lena的猫预约下周二的兽医。", "Book a vet appointment for Lena's cat next Tuesday."),
    ("What is the price of the red bike minus the discount?",
     "What is the price of the red bike minus the discount?"),
    ("¿Cuántos metros mide el puente rojo y quién lo construyó?",
     "How many metres long is the red bridge and who built it?"),
)


def translation_messages(goal: str) -> list[Message]:
    """The chat that asks for `goal` in English: the system text, the examples as turns,
    the goal last (so consecutive goals share the prompt up to the goal)."""
    messages: list[Message] = [{"role": "system", "content": SYSTEM}]
    for text, english in EXAMPLES:
        messages += [{"role": "user", "content": text},
                     {"role": "assistant", "content": english}]
    messages.append({"role": "user", "content": goal})
    return messages


class QueryTranslator:
    """`translator(goal)`: the goal in English from `llm`, remembered per goal; "" when
    the reply adds nothing (the goal itself, as an English goal gives back) or was cut."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self._seen: dict[str, str] = {}

    def __call__(self, goal: str) -> str:
        if goal not in self._seen:
            self._seen[goal] = self._translate(goal)
        return self._seen[goal]

    def known(self, goal: str) -> str:
        """The translation already made for `goal`, else "" (never asks the model)."""
        return self._seen.get(goal, "")

    def _translate(self, goal: str) -> str:
        prompt = self.llm.format_chat(translation_messages(goal))
        with self.llm.aside():
            out = self.llm.complete(prompt, max_tokens=MAX_TOKENS, stop=["\n"],
                                    temperature=0.0)
        english = out.text.strip()
        if out.finish_reason != "stop" or english == goal.strip():
            return ""  # cut (a half sentence could pull the wrong functions), or the goal
        return english
