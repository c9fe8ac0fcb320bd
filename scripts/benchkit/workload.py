"""What the benchmarks send: seeded generated chat messages and questions (about 10-25 words, a main
clause plus tails), the short word-salad texts of the soak, conversation lengths, and `fill` (batch
`store` of generated messages)."""

from __future__ import annotations

import random
import time
from typing import Any

from .client import Sidecar, dumps
from .output import log
from .timing import pct

NAMES = ["Sam", "Alex", "Jordan", "Priya", "Mateo", "Lena", "Kofi", "Yuki", "Omar", "Chloe", "Ivan", "Maya"]
RELATIONS = ["sister", "brother", "mom", "dad", "roommate", "boss", "best friend", "cousin", "partner", "neighbor"]
PETS = ["cat", "dog", "rabbit", "parrot", "hamster", "goldfish", "puppy", "kitten"]
PET_NAMES = ["Biscuit", "Luna", "Milo", "Pepper", "Ziggy", "Nala", "Oscar", "Mochi", "Rex", "Willow"]
PLACES = [
    "Lisbon",
    "Tokyo",
    "the lake house",
    "Berlin",
    "my grandparents' farm",
    "Montreal",
    "the coast",
    "Mexico City",
    "the mountains",
    "Edinburgh",
    "Seoul",
    "the new climbing gym",
    "the farmers market",
]
FOODS = [
    "ramen",
    "tacos",
    "sourdough",
    "pad thai",
    "sushi",
    "lasagna",
    "curry",
    "pho",
    "falafel",
    "pancakes",
    "dumplings",
    "paella",
    "banana bread",
]
HOBBIES = [
    "bouldering",
    "guitar",
    "chess",
    "running",
    "photography",
    "knitting",
    "gardening",
    "painting",
    "woodworking",
    "baking",
    "yoga",
    "cycling",
    "pottery",
    "birdwatching",
]
THINGS = [
    "laptop",
    "bike",
    "phone",
    "car",
    "espresso machine",
    "headphones",
    "keyboard",
    "camera",
    "apartment",
    "standing desk",
    "couch",
]
MEDIA = [
    "that new sci-fi series",
    "the Dune books",
    "a podcast about ancient Rome",
    "the latest Zelda game",
    "a documentary on octopuses",
    "a mystery novel",
    "the jazz album my dad recommended",
    "an anime about cooking",
]
ADJS = [
    "amazing",
    "terrible",
    "way too expensive",
    "surprisingly good",
    "kind of boring",
    "really relaxing",
    "super stressful",
    "better than expected",
    "a total mess",
    "honestly perfect",
    "pretty weird",
]
DAYS = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
    "tomorrow",
    "next week",
    "this weekend",
    "tonight",
]
JOBS = [
    "a nurse",
    "a software developer",
    "a teacher",
    "a chef",
    "an accountant",
    "a graphic designer",
    "an electrician",
    "a barista",
    "a data analyst",
    "an architect",
]
FEELINGS = ["tired", "excited", "nervous", "happy", "stressed", "bored", "anxious", "relieved", "hopeful"]
TOPICS = [
    "my job interview",
    "the move",
    "my exam",
    "the marathon",
    "the wedding",
    "my dentist appointment",
    "the project deadline",
    "my driving test",
    "the concert",
    "my sister's birthday party",
]

USER_MAIN = [
    "I just got back from {place} and honestly the food was {adj}",
    "my {pet} {pet_name} knocked a glass off the table again this morning",
    "I've been getting really into {hobby} lately, I try to practice every evening after work",
    "can you remind me that I have {topic} on {day}",
    "my {relation} {name} is visiting {day} and I have no idea what to cook",
    "I work as {job} and the shifts this month have been {adj}",
    "I'm allergic to peanuts so I always have to check the labels twice",
    "thinking about buying a new {thing} because mine is {adj}",
    "I made {food} for dinner yesterday and it came out {adj}",
    "I'm feeling pretty {feeling} about {topic}",
    "I started watching {media} and I can't stop",
    "we're planning a trip to {place} in the spring with my {relation}",
    "my favorite food is {food}, I could eat it every single day",
    "I finally fixed my {thing} after two weeks of it being broken",
    "I've been learning Spanish on my lunch breaks for about three months now",
    "I don't drink coffee anymore, switched to green tea a while ago",
    "my {relation} just got a {pet} and named it {pet_name}",
    "I need to stop staying up so late, I feel {feeling} all the time",
    "do you know any good places for {food} near downtown",
    "I ran my first 10k last weekend and my legs are still sore",
]
USER_TAILS = [
    "not sure if I'd do it again though",
    "my {relation} thought it was {adj}",
    "anyway that's my week so far",
    "I'll tell you more about it later",
    "it's been on my mind a lot",
    "which is kind of funny if you think about it",
    "I should probably write that down somewhere",
    "and {name} keeps asking me about it",
    "lol",
    "does that make sense",
    "I really want to get better at it",
    "it cost way more than I planned",
    "we'll see how it goes {day}",
    "I'm {feeling} just thinking about it",
]
BOT_MAIN = [
    "that sounds {adj}, how did your {relation} like it",
    "got it, I'll remember that you have {topic} on {day}",
    "nice, how long have you been doing {hobby} now",
    "{pet_name} sounds like a handful, is {pet_name} your first {pet}",
    "good luck with {topic}, you've prepared a lot for it",
    "being {job} means a tough schedule, make sure you get some rest",
    "if you liked {media} you might enjoy something similar next",
]
BOT_TAILS = [
    "let me know how it goes",
    "I'm happy to help you plan it",
    "tell me more whenever you want",
    "that's a great idea",
    "I'll keep that in mind for next time",
]
QUESTIONS = [
    "what pets does this user have",
    "where did I travel recently",
    "what is my job",
    "what food do I like",
    "do I have any allergies",
    "what are my hobbies",
    "when is my appointment",
    "who is visiting me",
    "what am I watching lately",
    "what did I cook yesterday",
    "how am I feeling",
    "what did I buy",
    "what is my {relation}'s name",
    "do I like coffee",
    "what language am I learning",
    "did I go running",
    "what's my {pet} called",
    "any plans for {day}",
]
# the soak's (and `memory`'s) texts: 4-20 of these words
WORDS = (
    "cat dog coffee tea hiking mountain router password pizza lunch meeting python rust music guitar "
    "weekend trip train beach rain snow book movie garden bike laptop phone birthday cake job office"
).split()


def _fill(template: str, rng: random.Random) -> str:
    return template.format(
        place=rng.choice(PLACES),
        adj=rng.choice(ADJS),
        pet=rng.choice(PETS),
        pet_name=rng.choice(PET_NAMES),
        hobby=rng.choice(HOBBIES),
        topic=rng.choice(TOPICS),
        day=rng.choice(DAYS),
        relation=rng.choice(RELATIONS),
        name=rng.choice(NAMES),
        job=rng.choice(JOBS),
        thing=rng.choice(THINGS),
        food=rng.choice(FOODS),
        feeling=rng.choice(FEELINGS),
        media=rng.choice(MEDIA),
    )


def make_message(rng: random.Random, bot: bool, min_words: int = 10, max_words: int = 25) -> str:
    """One chat message of min_words..max_words words: a main clause plus tails until long enough."""
    mains, tails = (BOT_MAIN, BOT_TAILS) if bot else (USER_MAIN, USER_TAILS)
    target = rng.randint(min_words, max_words)
    text = _fill(rng.choice(mains), rng)
    tries = 0
    while len(text.split()) < target:
        tail = _fill(rng.choice(tails), rng)
        if len(text.split()) + len(tail.split()) > max_words and tries < 20:
            tries += 1
            continue  # pick a shorter tail rather than cut one in half
        text += rng.choice([", ", ". "]) + tail
    text = " ".join(text.split()[:max_words]).rstrip(",.")
    if rng.random() < 0.6:
        text = text[0].upper() + text[1:]
    if rng.random() < 0.5:
        text += rng.choice([".", "!"])
    return text


def make_question(rng: random.Random) -> str:
    return _fill(rng.choice(QUESTIONS), rng)


def user_id(n: int) -> str:
    return f"user-{n:03d}"


def words_text(rng: random.Random) -> str:
    """The soak's message (and query) text: 4 to 20 words of WORDS."""
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 20)))


def conversation_length(rng: random.Random, mean: float) -> int:
    """Exchanges in one conversation: geometric with the given mean (at least one)."""
    if mean <= 1:
        return 1
    return 1 + int(rng.expovariate(1.0) * (mean - 1))


def query_every_user(sc: Sidecar, users: int, rng: random.Random) -> None:
    """The warm-up: every user queried once (default mode, limit 5), as the sidecar's start-up warm-up does."""
    for u in range(users):
        sc.request({"type": "query", "user_id": user_id(u), "text": make_question(rng), "limit": 5}, "results")


def fill(sc: Sidecar, rng: random.Random, rows: int, users: int, batch: int, quiet: bool = False) -> dict[str, Any]:
    """Batch `store` of `rows` generated messages (15% from the bot) over `users` users, timestamps spread
    over the last 20 days; how long it took."""
    now = time.time()
    span = 20 * 86_400
    batch_times: list[float] = []
    words = 0
    done = 0
    t_all = time.perf_counter()
    while done < rows:
        n = min(batch, rows - done)
        msgs = []
        for _ in range(n):
            bot = rng.random() < 0.15
            content = make_message(rng, bot)
            words += len(content.split())
            msgs.append(
                {
                    "user_id": user_id(rng.randrange(users)),
                    "content": content,
                    "is_bot": bot,
                    "timestamp": round(now - rng.random() * span, 3),
                }
            )
        line = dumps({"type": "store", "messages": msgs}) + b"\n"
        t0 = time.perf_counter()
        sc.send_raw(line)
        resp = sc.read()
        batch_times.append(time.perf_counter() - t0)
        if resp.get("type") != "ok" or not isinstance(resp.get("ids"), list) or len(resp["ids"]) != n:
            raise sc.fail(f"batch store of {n}: unexpected response {dumps(resp)[:1000]!r}")
        done += n
        log(f"  stored {done}/{rows} ({n / batch_times[-1]:.0f} msg/s this batch)", quiet)
    total = time.perf_counter() - t_all
    return {
        "rows": rows,
        "users": users,
        "batch": batch,
        "batches": len(batch_times),
        "seconds": total,
        "msgs_per_s": rows / total,
        "batch_latency": pct(batch_times),
        "avg_words": words / rows,
    }
