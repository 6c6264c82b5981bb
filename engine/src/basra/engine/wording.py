"""What players read of each rule system: its name and one line on how it plays, in English,
Arabic and Persian. ListRules sends them, and every frontend (the web table, the terminal)
shows them, so that none words the rule systems again. The names of RULES.md and VARIANTS.md
and the seeds' file names are for developers.

Numbers are written in each language's own digits (Arabic-Indic in Arabic, Persian in Persian).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

LANGUAGES: Final = ("en", "ar", "fa")
"""The languages a rule system is worded in (BCP 47 tags), English first."""


@dataclass(frozen=True, slots=True)
class Wording:
    """A rule system's name and description in one language."""

    language: str
    """A tag of ``LANGUAGES``."""
    name: str
    """The name to show players ("Classic, to 121")."""
    description: str
    """One line on how it plays."""


WORDINGS: Final[dict[str, tuple[Wording, ...]]] = {
    "eram": (
        Wording("en", "Classic, to 121", "Two players, to 121."),
        Wording("ar", "كلاسيكية، إلى ١٢١", "لاعبان، حتى ١٢١."),
        Wording("fa", "کلاسیک، تا ۱۲۱", "دو نفر، تا ۱۲۱."),
    ),
    "egyptian": (
        Wording(
            "en",
            "Egyptian, to 101",
            "Two players, or four in two partnerships, to 101; the dealer sees the stock's last card; a rubber of five games if you like.",
        ),
        Wording(
            "ar",
            "مصرية، إلى ١٠١",
            "لاعبان، أو أربعة في فريقين، حتى ١٠١؛ الموزّع يرى آخر ورقة في الرزمة؛ ويمكن لعب روبر من خمسة أشواط.",
        ),
        Wording(
            "fa",
            "مصری، تا ۱۰۱",
            "دو نفر، یا چهار نفر در دو تیم، تا ۱۰۱؛ پخش‌کننده آخرین کارت دسته را می‌بیند؛ اگر بخواهید رابر پنج‌بازی.",
        ),
    ),
    "jordanian": (
        Wording(
            "en",
            "Jordanian: basras worth double the card",
            "As Egyptian, to 101, but a basra is worth twice its card.",
        ),
        Wording("ar", "أردنية: الباصرة بضعف الورقة", "مثل المصرية، حتى ١٠١، والباصرة بضعف ورقتها."),
        Wording("fa", "اردنی: بصره دو برابر کارت", "مثل مصری، تا ۱۰۱، بصره دو برابر کارتش."),
    ),
    "lobashev": (
        Wording(
            "en",
            "Six-card deals (Lobashev)",
            "Six cards a deal, to 101; the majority is worth 3, the seven of diamonds is an ordinary seven.",
        ),
        Wording(
            "ar",
            "توزيع ست أوراق (لوباشيف)",
            "ست أوراق في كل توزيعة، حتى ١٠١؛ الأغلبية بـ٣ نقاط، وسبعة الديناري سبعة عادية.",
        ),
        Wording(
            "fa",
            "پخش شش‌کارتی (لوباشف)",
            "هر پخش شش کارت، تا ۱۰۱؛ اکثریت ۳ امتیاز، هفت خشت یک هفت معمولی است.",
        ),
    ),
    "persian": (
        Wording(
            "en", "Persian, each for themself", "Two to four players, each for themself, to 101."
        ),
        Wording("ar", "إيرانية، كل لاعب لنفسه", "من لاعبين إلى أربعة، كل لاعب لنفسه، حتى ١٠١."),
        Wording("fa", "ایرانی، هر کس برای خودش", "دو تا چهار نفر، هر کس برای خودش، تا ۱۰۱."),
    ),
    "persian-partnership": (
        Wording("en", "Persian, with a partner", "Four players in two partnerships, to 101."),
        Wording("ar", "إيرانية، مع شريك", "أربعة لاعبين في فريقين، حتى ١٠١."),
        Wording("fa", "ایرانی، با یار", "چهار نفر در دو تیم، تا ۱۰۱."),
    ),
}
"""Every rule system's wordings by its name, one per language of ``LANGUAGES`` in that order."""
