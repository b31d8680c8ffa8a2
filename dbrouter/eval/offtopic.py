"""The off-topic questions `dbrouter eval abstain` measures refusal with: general knowledge,
chit-chat and gibberish that no repository of business databases should answer.

They come from a public corpus, never from the probes a KB calibrates its abstention with (the
seed ``offtopic_probes``, written for dbrouter): the opening line of every English conversation of
chatterbot-corpus (BSD licence; trivia, greetings, AI, emotion, science, history, sports, ...,
installed by ``make setup``), a seeded sample of them, plus seeded gibberish (runs of random
letters, the keyboard-mash a user types to try a tool).
"""

from __future__ import annotations

import importlib.util
import random
import string
from pathlib import Path

import yaml

from dbrouter.errors import DbrouterError

CORPUS = "chatterbot_corpus"
"""The Python package holding the corpus (PyPI ``chatterbot-corpus``)."""


def corpus_dir() -> Path:
    """The directory of the corpus' English YAML files.

    Returns:
        ``.../chatterbot_corpus/data/english``.

    Raises:
        DbrouterError: the corpus is not installed (says how to install it).
    """
    spec = importlib.util.find_spec(CORPUS)
    if spec is None or not spec.submodule_search_locations:
        raise DbrouterError("eval abstain's off-topic questions need the chatterbot-corpus package: "
                            "run `make setup` (or pip install -e '.[dev]')")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "english"


def corpus_questions() -> list[tuple[str, str]]:
    """Every distinct opening line of the corpus' English conversations, with its category.

    Returns:
        ``(category, text)`` pairs in file and corpus order, each text once.
    """
    seen: set[str] = set()
    out = []
    for path in sorted(corpus_dir().glob("*.yml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for conv in data.get("conversations") or []:
            text = conv[0].strip() if conv and isinstance(conv[0], str) else ""
            if text and text not in seen:
                seen.add(text)
                out.append((path.stem, text))
    return out


def gibberish(n: int, seed: int = 0) -> list[str]:
    """``n`` strings of 1-4 random lowercase "words" of 3-9 letters.

    Args:
        n: how many.
        seed: the random seed.

    Returns:
        The strings.
    """
    rng = random.Random(seed)
    return [" ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 9)))
                     for _ in range(rng.randint(1, 4))) for _ in range(n)]


def offtopic_questions(n_corpus: int = 400, n_gibberish: int = 100, seed: int = 0) -> list[tuple[str, str]]:
    """The evaluation's off-topic set: a seeded sample of the corpus plus gibberish.

    Args:
        n_corpus: corpus questions (all of them when fewer).
        n_gibberish: gibberish strings.
        seed: the random seed of both.

    Returns:
        ``(kind, text)`` pairs; kind is the corpus category or ``gibberish``.
    """
    corpus = corpus_questions()
    picked = random.Random(seed).sample(corpus, min(n_corpus, len(corpus)))
    return picked + [("gibberish", g) for g in gibberish(n_gibberish, seed)]
