"""A deterministic synthetic vault for benchmarks: realistic prose notes, links, relations and frontmatter.

Notes are built from eight topic vocabularies (software, gardening, cooking, travel, research, music, finance,
health) poured into English sentence templates, spread over the seven cortex folders. Each note has 2–4 `##`
sections of about 120–200 model tokens, so a vault of N notes has about 3N chunks (`--sections 5,6,7,8`: about
6.5N, as in a 6.6k-note community vault of 43k chunks).
Run: `python tests/bench/gen.py DIR [--notes 2000] [--seed 7] [--sections 2,3,3,3,4]`.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

SECTIONS = (2, 3, 3, 3, 4)  # sections per note, drawn from these: about 3 chunks per note
REGIONS = ("soul", "personality", "artistic", "linguistic", "scientific", "long_term", "short_term")
REGION_SHARE = (0.06, 0.08, 0.12, 0.10, 0.20, 0.20, 0.24)
TEMPLATE_CONFIG = Path(__file__).resolve().parents[2] / "vault_template" / ".cortex" / "config.toml"


@dataclass(frozen=True)
class Topic:
    """One subject's words; every list is plain text without YAML or markdown specials."""

    name: str
    nouns: tuple[str, ...]  # singular, used as "the {noun}"
    verbs: tuple[tuple[str, str, str], ...]  # (base, past, gerund)
    adjs: tuple[str, ...]
    people: tuple[str, ...]  # sentence subjects, lower-case unless a name
    problems: tuple[str, ...]  # past-tense predicates: "the {noun} {problem}"
    outcomes: tuple[str, ...]  # full clauses
    measures: tuple[str, ...]  # full clauses with numbers
    headings: tuple[str, ...]
    tags: tuple[str, ...]
    projects: tuple[str, ...]


TOPICS = (
    Topic(
        name="software",
        nouns=("connection pool", "release branch", "retry loop", "query planner", "build cache", "test suite",
               "deploy script", "message queue", "config loader", "search index", "session store",
               "rate limiter", "schema migration", "log pipeline", "feature flag", "dependency tree",
               "API gateway", "background worker", "WAL checkpoint", "error handler", "cache layer",
               "type checker", "CI runner", "database index", "memory profiler", "code review"),
        verbs=(("profile", "profiled", "profiling"), ("refactor", "refactored", "refactoring"),
               ("rewrite", "rewrote", "rewriting"), ("benchmark", "benchmarked", "benchmarking"),
               ("simplify", "simplified", "simplifying"), ("instrument", "instrumented", "instrumenting"),
               ("split", "split", "splitting"), ("debug", "debugged", "debugging"),
               ("document", "documented", "documenting"), ("pin", "pinned", "pinning"),
               ("replace", "replaced", "replacing"), ("review", "reviewed", "reviewing"),
               ("cache", "cached", "caching"), ("test", "tested", "testing")),
        adjs=("flaky", "slow", "brittle", "boring", "well-tested", "stateless", "noisy", "legacy",
              "over-engineered", "predictable", "concurrent", "idempotent"),
        people=("a colleague", "Priya", "the reviewer", "Tomas", "the on-call engineer", "my team lead"),
        problems=("kept timing out under load", "leaked file handles", "deadlocked during the nightly job",
                  "returned stale results", "doubled the build time", "crashed on empty input",
                  "failed only on the CI machine", "silently dropped a few records"),
        outcomes=("the latency dropped by half", "the flaky test finally went green",
                  "the build got twice as fast", "nobody was paged that week",
                  "the memory stayed flat overnight", "the diff was small enough to review in one sitting"),
        measures=("the p95 latency went from 180 ms to 40 ms", "the test suite now runs in 94 seconds",
                  "the index file shrank from 1.2 GB to 310 MB", "about 3 percent of requests were retried",
                  "the worker handled 2,400 jobs an hour before it stalled"),
        headings=("Context", "What broke", "What I tried", "The fix", "Trade-offs", "Open questions",
                  "Lessons", "Next steps", "Measurements", "Why it matters"),
        tags=("software", "debugging", "performance", "architecture", "testing", "sqlite", "python"),
        projects=("vault-cortex", "billing-service", "greenhouse-sensor", "home-server"),
    ),
    Topic(
        name="gardening",
        nouns=("tomato bed", "compost heap", "raised bed", "drip line", "seed tray", "rhubarb crown",
               "apple tree", "herb spiral", "greenhouse vent", "rain barrel", "potato patch", "mulch layer",
               "bean trellis", "soil probe", "leaf mould", "strawberry runner", "garlic row",
               "cold frame", "pear espalier", "squash vine", "courgette plant", "pepper seedling"),
        verbs=(("prune", "pruned", "pruning"), ("water", "watered", "watering"), ("mulch", "mulched", "mulching"),
               ("transplant", "transplanted", "transplanting"), ("sow", "sowed", "sowing"),
               ("feed", "fed", "feeding"), ("harvest", "harvested", "harvesting"), ("stake", "staked", "staking"),
               ("thin", "thinned", "thinning"), ("cover", "covered", "covering"), ("turn", "turned", "turning"),
               ("divide", "divided", "dividing")),
        adjs=("waterlogged", "leggy", "sun-scorched", "heavy", "crumbly", "frost-bitten", "vigorous",
              "sheltered", "sandy", "overcrowded", "healthy", "root-bound"),
        people=("my neighbour", "Grandma", "the allotment secretary", "Jonas", "a seed swap regular"),
        problems=("went yellow at the bottom leaves", "bolted in the first heatwave",
                  "caught blight after a wet week", "dried out within two days",
                  "attracted every slug in the street", "split after the heavy rain",
                  "stopped flowering in August"),
        outcomes=("the plants recovered within a week", "we picked tomatoes until October",
                  "the soil stayed moist through the dry spell", "the slugs finally moved on",
                  "the harvest was the biggest in three years"),
        measures=("the soil probe read 18 percent moisture at noon",
                  "we picked 14 kilograms of potatoes from one bed",
                  "the greenhouse reached 38 degrees with the vents shut",
                  "germination was 9 seeds out of 12", "the compost reached 60 degrees in four days"),
        headings=("Soil preparation", "What I planted", "Watering", "Pests and problems", "Harvest",
                  "Observations", "Next season", "Timing", "What worked", "Mistakes"),
        tags=("garden", "vegetables", "compost", "soil", "greenhouse", "seasonal"),
        projects=("greenhouse-sensor", "allotment-plan", "orchard"),
    ),
    Topic(
        name="cooking",
        nouns=("sourdough starter", "cast iron pan", "bread dough", "chicken stock", "tomato sauce",
               "risotto base", "spice blend", "pie crust", "curry paste", "brine", "pickle jar",
               "dumpling filling", "pasta dough", "roast dinner", "lentil soup", "chocolate ganache",
               "stir fry", "ferment", "marinade", "oven thermometer", "rice cooker", "knife edge"),
        verbs=(("bake", "baked", "baking"), ("braise", "braised", "braising"), ("season", "seasoned", "seasoning"),
               ("reduce", "reduced", "reducing"), ("knead", "kneaded", "kneading"), ("taste", "tasted", "tasting"),
               ("simmer", "simmered", "simmering"), ("roast", "roasted", "roasting"),
               ("ferment", "fermented", "fermenting"), ("toast", "toasted", "toasting"),
               ("sharpen", "sharpened", "sharpening"), ("rest", "rested", "resting")),
        adjs=("bland", "over-proofed", "silky", "crisp", "smoky", "gummy", "bright", "rich", "salty",
              "underbaked", "fragrant", "sticky"),
        people=("my partner", "Aunt Rosa", "the butcher", "Mei", "a friend from the bakery"),
        problems=("collapsed in the oven", "tasted flat after a day", "split when the butter went in",
                  "stuck to the pan", "turned bitter on the second reduction", "never rose properly",
                  "went grey instead of brown"),
        outcomes=("the crust finally crackled", "everyone asked for the recipe",
                  "the flavour got deeper overnight", "dinner was on the table in thirty minutes",
                  "nothing was left for the next day"),
        measures=("the dough proved for 14 hours at 21 degrees", "the oven runs 15 degrees hotter than the dial",
                  "hydration of 72 percent gave the best crumb", "the stock reduced by a third in 40 minutes",
                  "two teaspoons of salt per kilogram was enough"),
        headings=("Ingredients", "Method", "What went wrong", "Variations", "Timing", "Tasting notes",
                  "Next attempt", "Equipment", "Shopping list", "Why it works"),
        tags=("cooking", "baking", "recipes", "fermentation", "dinner"),
        projects=("family-cookbook", "bread-log"),
    ),
    Topic(
        name="travel",
        nouns=("night train", "mountain hut", "ferry timetable", "hostel booking", "hiking route",
               "rail pass", "packing list", "border crossing", "rental car", "walking tour",
               "coastal path", "travel insurance", "old town", "market hall", "bus station", "day pack",
               "guesthouse", "visa form", "city map", "tram line"),
        verbs=(("book", "booked", "booking"), ("pack", "packed", "packing"), ("walk", "walked", "walking"),
               ("explore", "explored", "exploring"), ("plan", "planned", "planning"),
               ("cancel", "cancelled", "cancelling"), ("photograph", "photographed", "photographing"),
               ("visit", "visited", "visiting"), ("skip", "skipped", "skipping"),
               ("reroute", "rerouted", "rerouting"), ("compare", "compared", "comparing")),
        adjs=("crowded", "quiet", "overpriced", "scenic", "delayed", "remote", "charming", "chaotic",
              "windswept", "affordable", "unmarked", "steep"),
        people=("my sister", "the hut warden", "a taxi driver", "Lena", "the guesthouse owner", "Marco"),
        problems=("was cancelled at the last minute", "ran two hours late", "was fully booked in July",
                  "turned out to be closed on Mondays", "doubled in price over the weekend",
                  "was washed out by the storm"),
        outcomes=("we caught the last ferry with ten minutes to spare", "the detour became the best day of the trip",
                  "we saved almost a hundred euros", "the whole route fitted into four days",
                  "we never needed the rental car"),
        measures=("the walk was 23 kilometres with 900 metres of climbing",
                  "the night train took eleven hours and cost 89 euros",
                  "the pack weighed 7 kilograms without water", "we spent 41 euros a day on average",
                  "the ferry crossing took 2 hours 40 minutes"),
        headings=("Route", "Getting there", "Where we stayed", "Costs", "Highlights", "What I would change",
                  "Practical notes", "Packing", "Food", "Next trip"),
        tags=("travel", "hiking", "trains", "planning", "europe"),
        projects=("summer-trip", "alps-traverse", "rail-journal"),
    ),
    Topic(
        name="research",
        nouns=("literature review", "sample size", "control group", "survey design", "regression model",
               "pilot study", "data cleaning step", "citation manager", "lab notebook", "hypothesis",
               "baseline measurement", "analysis script", "peer review", "grant proposal",
               "confidence interval", "coding scheme", "interview protocol", "reading list",
               "effect size", "replication attempt"),
        verbs=(("analyse", "analysed", "analysing"), ("measure", "measured", "measuring"),
               ("replicate", "replicated", "replicating"), ("summarise", "summarised", "summarising"),
               ("question", "questioned", "questioning"), ("annotate", "annotated", "annotating"),
               ("preregister", "preregistered", "preregistering"), ("compare", "compared", "comparing"),
               ("plot", "plotted", "plotting"), ("revise", "revised", "revising"),
               ("validate", "validated", "validating")),
        adjs=("underpowered", "noisy", "robust", "surprising", "biased", "exploratory", "tentative",
              "well-controlled", "messy", "promising", "inconclusive", "careful"),
        people=("my supervisor", "the second reviewer", "Dr Okafor", "a co-author", "Ines", "the lab manager"),
        problems=("did not replicate on the second sample", "hid a strong ceiling effect",
                  "was confounded by the time of day", "depended on a single outlier",
                  "was missing a third of the responses", "contradicted the earlier paper"),
        outcomes=("the effect held up in both samples", "the reviewers accepted the revised version",
                  "the picture became much clearer", "the analysis now runs end to end in one script",
                  "we dropped two weak claims from the paper"),
        measures=("the effect size was 0.31 with a wide interval", "we collected 412 usable responses",
                  "inter-rater agreement reached a kappa of 0.78", "the model explained 22 percent of the variance",
                  "the pilot took 19 participants and three weeks"),
        headings=("Question", "Method", "Data", "Findings", "Limitations", "Related work", "Open questions",
                  "Next steps", "Reviewer comments", "Summary"),
        tags=("research", "statistics", "methods", "reading", "writing"),
        projects=("thesis", "sleep-study", "survey-2026"),
    ),
    Topic(
        name="music",
        nouns=("chord progression", "practice routine", "metronome setting", "bass line", "guitar string",
               "mixing desk", "vocal warm-up", "drum pattern", "piano voicing", "setlist", "tuning peg",
               "rehearsal plan", "recording session", "reverb send", "scale exercise", "song bridge",
               "amp setting", "sight-reading drill", "microphone placement", "fingerpicking pattern"),
        verbs=(("practise", "practised", "practising"), ("record", "recorded", "recording"),
               ("transpose", "transposed", "transposing"), ("arrange", "arranged", "arranging"),
               ("tune", "tuned", "tuning"), ("mix", "mixed", "mixing"), ("rehearse", "rehearsed", "rehearsing"),
               ("slow down", "slowed down", "slowing down"), ("improvise", "improvised", "improvising"),
               ("memorise", "memorised", "memorising")),
        adjs=("muddy", "tight", "rushed", "warm", "thin", "lively", "sloppy", "spacious", "bright",
              "out-of-tune", "laid-back", "dense"),
        people=("my teacher", "the drummer", "Sam", "the sound engineer", "a bandmate", "Clara"),
        problems=("fell apart at the tempo change", "sounded muddy on the recording",
                  "drifted sharp during the set", "buzzed on the third fret",
                  "lost its energy in the second verse", "clashed with the vocal line"),
        outcomes=("the song finally breathed", "the gig went better than any rehearsal",
                  "the recording needed only two takes", "my hands stopped aching after practice",
                  "the bridge became the best part of the song"),
        measures=("I can now play the passage cleanly at 132 beats per minute",
                  "the set ran 48 minutes with two short breaks", "the low cut at 90 Hz cleared the mix",
                  "twenty minutes of scales a day for three weeks", "the vocal sat 3 dB too loud in the chorus"),
        headings=("Practice log", "What I worked on", "Sound", "Arrangement", "Gig notes", "Gear",
                  "Problems", "Ideas", "Next rehearsal", "Listening notes"),
        tags=("music", "guitar", "practice", "recording", "band"),
        projects=("band-ep", "piano-grade-5", "home-studio"),
    ),
    Topic(
        name="finance",
        nouns=("monthly budget", "index fund", "emergency fund", "pension contribution", "tax return",
               "savings account", "mortgage offer", "expense tracker", "credit card bill", "insurance policy",
               "standing order", "spending category", "rent increase", "energy bill", "investment plan",
               "receipt folder", "subscription list", "interest rate", "salary negotiation", "bank fee"),
        verbs=(("track", "tracked", "tracking"), ("cancel", "cancelled", "cancelling"),
               ("rebalance", "rebalanced", "rebalancing"), ("negotiate", "negotiated", "negotiating"),
               ("automate", "automated", "automating"), ("review", "reviewed", "reviewing"),
               ("cut", "cut", "cutting"), ("split", "split", "splitting"), ("save", "saved", "saving"),
               ("compare", "compared", "comparing"), ("file", "filed", "filing")),
        adjs=("tight", "generous", "hidden", "fixed", "variable", "overdue", "sensible", "expensive",
              "forgotten", "realistic", "cheaper", "automatic"),
        people=("my accountant", "the bank adviser", "my partner", "Dad", "a friend in insurance", "Oskar"),
        problems=("went over by two hundred euros", "renewed without any warning",
                  "charged a fee I had never noticed", "ate most of the monthly surplus",
                  "was three weeks late", "quietly went up by twelve percent"),
        outcomes=("we saved enough for the repair without borrowing", "the budget balanced for the first time",
                  "the tax bill came out lower than expected", "money stopped being a weekly worry",
                  "the fund grew steadily without any attention"),
        measures=("we spend about 410 euros a month on groceries", "the fee was 4.50 a month for six years",
                  "the fund returned 6.2 percent after costs", "the emergency fund now covers five months",
                  "cancelling three subscriptions saved 38 euros a month"),
        headings=("Numbers", "Decision", "Options", "Risks", "What changed", "Monthly review", "Plan",
                  "Questions for the adviser", "Assumptions", "Follow-up"),
        tags=("money", "budget", "investing", "taxes", "household"),
        projects=("house-move", "pension-plan", "household-budget"),
    ),
    Topic(
        name="health",
        nouns=("sleep routine", "running plan", "knee pain", "blood pressure", "strength session",
               "morning walk", "caffeine habit", "screen time", "stretching routine", "physio exercise",
               "meal plan", "water intake", "step count", "posture", "back pain", "breathing exercise",
               "rest day", "heart rate", "evening routine", "standing desk"),
        verbs=(("stretch", "stretched", "stretching"), ("track", "tracked", "tracking"),
               ("reduce", "reduced", "reducing"), ("build up", "built up", "building up"),
               ("rest", "rested", "resting"), ("measure", "measured", "measuring"), ("skip", "skipped", "skipping"),
               ("adjust", "adjusted", "adjusting"), ("restart", "restarted", "restarting"),
               ("walk", "walked", "walking"), ("log", "logged", "logging")),
        adjs=("sore", "steady", "restless", "consistent", "tired", "energetic", "stiff", "gentle",
              "sustainable", "irregular", "calm", "demanding"),
        people=("the physio", "my doctor", "a running friend", "Noor", "the coach", "my brother"),
        problems=("flared up after the long run", "slipped during the busy weeks",
                  "crept up again over the winter", "kept me awake past midnight",
                  "got worse whenever I sat for hours", "stalled for a month"),
        outcomes=("I slept through the night most days", "the pain was gone after three weeks",
                  "the ten kilometres felt easy by the end", "my resting heart rate dropped",
                  "the afternoon slump mostly disappeared"),
        measures=("my resting heart rate went from 64 to 57", "I averaged 7 hours 20 minutes of sleep",
                  "the long run grew from 8 to 14 kilometres", "blood pressure was 124 over 79",
                  "three sessions a week for six weeks"),
        headings=("How it started", "What I changed", "Routine", "Progress", "Setbacks", "Advice I got",
                  "Numbers", "What helps", "Next month", "Notes to self"),
        tags=("health", "sleep", "running", "habits", "fitness"),
        projects=("marathon-2026", "sleep-reset"),
    ),
)
TOPIC_BY_NAME = {t.name: t for t in TOPICS}

# Region → topic weights, in TOPICS order: identity notes lean to health and money, art to music and cooking.
REGION_TOPICS = {
    "soul": (1, 2, 1, 2, 1, 3, 3, 3),
    "personality": (2, 2, 2, 2, 1, 2, 2, 3),
    "artistic": (1, 2, 3, 2, 1, 5, 0, 0),
    "linguistic": (2, 1, 1, 3, 3, 2, 1, 1),
    "scientific": (4, 2, 1, 0, 5, 1, 1, 2),
    "long_term": (3, 2, 1, 2, 2, 1, 3, 2),
    "short_term": (2, 2, 2, 2, 2, 2, 2, 2),
}

TIMES = ("on Tuesday morning", "last week", "after lunch", "over the weekend", "in early March",
         "late in the evening", "before the holidays", "yesterday", "at the end of the month",
         "during the long weekend", "on the first warm day", "two weeks ago")
DURATIONS = ("a week", "three days", "a whole afternoon", "two weekends", "about a month", "an hour a day")
MANNERS = ("step by step", "more carefully", "one piece at a time", "without rushing", "in smaller batches")

SENTENCES = (
    "I {past} the {n1} {time} and {outcome}.",
    "The {n1} {problem}, so I {past} the {n2} instead.",
    "{Person} suggested {gerund} the {n1} before touching the {n2}.",
    "It turned out that the {adj} {n1} mattered more than the {n2}.",
    "Next time I want to {base} the {n1} earlier, because the {n2} depends on it.",
    "Compared with the {n2}, the {n1} is {adj} but much harder to {base}.",
    "My rule of thumb now: {base} the {n1} first, then worry about the {n2}.",
    "I still do not know why the {n1} {problem} {time}.",
    "After {gerund} the {n1} for {duration}, {outcome}.",
    "The {n1} looked fine at first, but {person} noticed that it {problem}.",
    "Writing this down so I remember that the {n1} and the {n2} have to change together.",
    "A quick measurement for the record: {measure}.",
    "{Time}, {person} and I {past} the {n1} together {manner}.",
    "The trick was to {base} the {n1} {manner} and keep an eye on the {n2}.",
    "I am fairly sure the {adj} {n1} explains the trouble with the {n2}, though I have not proven it.",
    "The last time the {n1} {problem}, the first thing I checked was the {n2}.",
    "Nobody warned me that {gerund} the {n1} would take {duration}.",
    "In the end {outcome}, which was more than I hoped for.",
    "I keep coming back to the {n1}; it is the part I understand least.",
    "{Gerund} the {n2} made the {n1} feel {adj}, which surprised me.",
    "The honest summary is that {measure}, and that is good enough for now.",
    "If I had to start again I would {base} the {n1} {manner} and leave the {n2} alone.",
)
REGION_SENTENCES = {
    "soul": ("I believe that {gerund} the {n1} carefully matters more than doing it quickly.",
             "This is one of the things I value: keeping the {n1} simple enough to explain to anyone.",
             "I made a promise to myself to stop {gerund} the {n1} out of guilt."),
    "personality": ("I tend to {base} the {n1} late in the evening, when my energy is lower.",
                    "My mood drops whenever the {n1} {problem}; I notice it before I can name it.",
                    "Habitually I put off the {n1} until it becomes urgent."),
    "artistic": ("I made a rough sketch of the {n1} before changing anything.",
                 "There is a kind of design in the {n1} that I want to keep."),
    "linguistic": ("The wording in my old notes about the {n1} was vague; I rewrote it in plain sentences.",
                   "I want a better phrase than '{adj} {n1}' for what I mean here."),
    "scientific": ("I measured the {n1} three times to make sure the numbers were stable.",
                   "Treat this as an experiment: change the {n1}, keep the {n2} fixed, and compare."),
    "long_term": ("Decision: from now on I always {base} the {n1} before the {n2}.",
                  "The lesson I want to keep is that the {n1} is never as simple as it looks."),
    "short_term": ("Quick note for this week: {base} the {n1} before Friday.",
                   "Reminder to myself to check the {n1} again tomorrow."),
}
LINK_SENTENCES = (
    "See [[{t}]] for the details.",
    "This builds on [[{t}]].",
    "There is a longer discussion in [[{t}|the earlier note]].",
    "It is a lot like what happened in [[{t}]].",
    "I compared this with [[{t}]] and the pattern is the same.",
)
HEADING_LINK_SENTENCES = (
    "The numbers are in [[{t}#{h}]].",
    "Compare the section [[{t}#{h}]].",
    "I wrote the reasoning down in [[{t}#{h}|{h}]].",
)
DANGLING_SENTENCES = (
    "I should write up [[{t}]] at some point.",
    "This probably belongs in [[{t}]], which does not exist yet.",
)
TITLE_PATTERNS = (
    "{Gerund} the {n1}", "Why the {n1} {problem_short}", "Notes on the {adj} {n1}", "The {n1} and the {n2}",
    "What I learned about the {n1}", "{N1} {suffix}", "{Adj} {n1} {suffix}", "How I {past} the {n1}",
    "{Gerund} the {n1} {time_short}", "When the {n1} {problem_short}",
)
TITLE_SUFFIXES = ("checklist", "experiment", "retrospective", "plan", "log", "ideas", "decision",
                  "notes", "review", "questions")
TITLE_TIMES = ("in spring", "in winter", "after the move", "this year", "on a budget", "for beginners",
               "again", "the slow way", "for the first time", "at last")
PROBLEM_SHORT = ("keeps failing", "stalls", "got worse", "needs a rethink", "surprised me", "went wrong",
                 "finally worked", "matters")
QUERY_PATTERNS = (
    "how did I fix the {n1} that {problem}",
    "{n1} {n2}",
    "what did I decide about the {n1}",
    "notes on {gerund} the {n1}",
    "why the {n1} {problem}",
    "{adj} {n1}",
    "{gerund} {n1} tips",
    "when did {person} suggest {gerund} the {n1}",
    "{n1} measurements",
    "what went wrong with the {n1}",
    "best way to {base} the {n1}",
    "{n1} lessons learned",
)


@dataclass
class _Plan:
    """One note before its text is written: where it goes and what it is about."""

    path: str
    title: str
    region: str
    topic: Topic
    headings: list[str]
    links: list[str] = field(default_factory=list)  # rendered link sentences, placed later


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _slots(rng: random.Random, topic: Topic) -> dict[str, str]:
    n1, n2 = rng.sample(topic.nouns, 2)
    base, past, gerund = rng.choice(topic.verbs)
    person = rng.choice(topic.people)
    time = rng.choice(TIMES)
    return {
        "n1": n1, "n2": n2, "N1": _cap(n1), "base": base, "past": past, "gerund": gerund,
        "Gerund": _cap(gerund), "adj": rng.choice(topic.adjs), "Adj": _cap(rng.choice(topic.adjs)),
        "person": person, "Person": _cap(person), "problem": rng.choice(topic.problems),
        "outcome": rng.choice(topic.outcomes), "measure": rng.choice(topic.measures), "time": time,
        "Time": _cap(time), "duration": rng.choice(DURATIONS), "manner": rng.choice(MANNERS),
        "suffix": rng.choice(TITLE_SUFFIXES), "time_short": rng.choice(TITLE_TIMES),
        "problem_short": rng.choice(PROBLEM_SHORT),
    }


def _title(rng: random.Random, topic: Topic, taken: set[str]) -> str:
    for attempt in range(60):
        title = rng.choice(TITLE_PATTERNS).format(**_slots(rng, topic))
        if attempt > 30:
            title += f" {rng.choice(TITLE_TIMES)}"
        if title.lower() not in taken:
            taken.add(title.lower())
            return title
    n = 2
    while f"{title} {n}".lower() in taken:
        n += 1
    taken.add(f"{title} {n}".lower())
    return f"{title} {n}"


def _plan(rng: random.Random, n_notes: int, sections: Sequence[int]) -> list[_Plan]:
    taken: set[str] = set()
    plans = []
    for _ in range(n_notes):
        region = rng.choices(REGIONS, REGION_SHARE)[0]
        topic = rng.choices(TOPICS, REGION_TOPICS[region])[0]
        title = _title(rng, topic, taken)
        headings = rng.sample(topic.headings, rng.choice(sections))
        plans.append(_Plan(path=f"{region}/{title}.md", title=title, region=region, topic=topic,
                           headings=headings))
    return plans


def _sentences(rng: random.Random, topic: Topic, region: str, target: int) -> list[str]:
    """Sentences of about `target` words, no template twice, at most one in the region's own voice."""
    pool = list(SENTENCES)
    rng.shuffle(pool)
    if rng.random() < 0.5:
        pool.insert(rng.randint(0, 4), rng.choice(REGION_SENTENCES[region]))
    out: list[str] = []
    words = 0
    while words < target:
        s = pool[len(out) % len(pool)].format(**_slots(rng, topic))
        out.append(s)
        words += len(s.split())
    return out


def _section(rng: random.Random, plan: _Plan, links: list[str]) -> list[str]:
    """One section's lines: ~75–115 words (≈120–200 tokens) in paragraphs, with its share of links."""
    sentences = _sentences(rng, plan.topic, plan.region, rng.randint(75, 115))
    for link in links:
        sentences.insert(rng.randint(1, len(sentences)), link)
    lines: list[str] = []
    i = 0
    while i < len(sentences):
        size = rng.randint(3, 5)
        lines.append(" ".join(sentences[i:i + size]))
        lines.append("")
        i += size
    if rng.random() < 0.1:
        lines[-2] += f" #{rng.choice(plan.topic.tags)}"
    if rng.random() < 0.2:
        verbs = rng.sample(plan.topic.verbs, 3)
        nouns = rng.sample(plan.topic.nouns, 3)
        lines += [f"- {_cap(v[0])} the {n}." for v, n in zip(verbs, nouns, strict=True)] + [""]
    return lines


def _frontmatter(rng: random.Random, plan: _Plan, plans: list[_Plan]) -> list[str]:
    day = rng.randint(0, 700)
    year, doy = (2025, day) if day < 365 else (2026, day - 365)
    month = min(12, doy // 31 + 1)
    created = f"{year}-{month:02d}-{doy % 28 + 1:02d}T{rng.randint(7, 22):02d}:{rng.choice((0, 15, 30, 45)):02d}"
    tags = [plan.topic.tags[0], *rng.sample(plan.topic.tags[1:], rng.randint(0, 2))]
    lines = ["---"]
    if plan.region != "short_term" or rng.random() < 0.7:
        lines.append(f"cortex: {plan.region}")
    lines += [f"importance: {rng.uniform(0.2, 0.95):.2f}", f"created: {created}",
              f"tags: [{', '.join(tags)}]"]
    if rng.random() < 0.3:
        lines.append(f"project: {rng.choice(plan.topic.projects)}")
    if rng.random() < 0.15:
        words = plan.title.split()
        alias = " ".join(words[-2:]) if len(words) > 2 else f"{plan.title} note"
        lines.append(f"aliases: [{_cap(alias)}]")
    if rng.random() < 0.1:
        rel = rng.choice(("supports", "leads_to", "reminds_of", "example_of", "derived_from"))
        lines += ["relations:", f'  {rel}: ["[[{rng.choice(plans).title}]]"]']
    lines.append("---")
    return lines


def _note_text(rng: random.Random, plan: _Plan, plans: list[_Plan], by_topic: dict[str, list[_Plan]],
               dangling: list[str]) -> str:
    links: list[str] = []
    for _ in range(rng.randint(2, 5)):
        r = rng.random()
        pool = by_topic[plan.topic.name] if rng.random() < 0.6 else plans
        target = rng.choice(pool)
        if target is plan:
            continue
        if r < 0.08:
            links.append(rng.choice(DANGLING_SENTENCES).format(t=rng.choice(dangling)))
        elif r < 0.25:
            links.append(rng.choice(HEADING_LINK_SENTENCES).format(t=target.title, h=rng.choice(target.headings)))
        else:
            links.append(rng.choice(LINK_SENTENCES).format(t=target.title))
    per_section: list[list[str]] = [[] for _ in plan.headings]
    for link in links:
        per_section[rng.randrange(len(per_section))].append(link)
    lines = _frontmatter(rng, plan, plans)
    for heading, section_links in zip(plan.headings, per_section, strict=True):
        lines += [f"## {heading}", ""]
        lines += _section(rng, plan, section_links)
    if rng.random() < 0.08:
        lines += [f"related_to:: [[{rng.choice(plans).title}]]", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def make_vault(root: Path, n_notes: int = 2000, seed: int = 7, sections: Sequence[int] = SECTIONS) -> None:
    """Write a vault of n_notes notes under root (created if missing); the same seed gives the same bytes. Each
    note has a number of sections drawn from `sections` (at most 10)."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / ".cortex").mkdir(exist_ok=True)
    if TEMPLATE_CONFIG.is_file():
        shutil.copyfile(TEMPLATE_CONFIG, root / ".cortex" / "config.toml")
    for region in REGIONS:
        (root / region).mkdir(exist_ok=True)
    plans = _plan(rng, n_notes, sections)
    taken = {p.title.lower() for p in plans}
    dangling = [_title(rng, rng.choice(TOPICS), taken) for _ in range(max(10, n_notes // 40))]
    by_topic: dict[str, list[_Plan]] = {t.name: [] for t in TOPICS}
    for p in plans:
        by_topic[p.topic.name].append(p)
    for plan in plans:
        text = _note_text(rng, plan, plans, by_topic, dangling)
        (root / plan.path).write_text(text, encoding="utf-8", newline="\n")


def queries(n: int, seed: int = 7) -> list[str]:
    """n realistic search queries over the same vocabularies as the vault."""
    rng = random.Random(seed * 7919 + 1)
    out = []
    for _ in range(n):
        topic = rng.choice(TOPICS)
        out.append(rng.choice(QUERY_PATTERNS).format(**_slots(rng, topic)))
    return out


def sections_arg(text: str) -> tuple[int, ...]:
    """`--sections 5,6,7,8`: the numbers of sections a note may have, each from 1 to 10."""
    counts = tuple(int(n) for n in text.split(","))
    if not counts or not all(1 <= n <= 10 for n in counts):
        raise argparse.ArgumentTypeError("sections per note are numbers from 1 to 10, separated by commas")
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("dest", type=Path)
    ap.add_argument("--notes", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--sections", type=sections_arg, default=SECTIONS, metavar="N,N,…",
                    help="sections per note, drawn from these (5,6,7,8: about 6.5 chunks per note)")
    args = ap.parse_args(argv)
    if args.dest.exists() and any(args.dest.iterdir()):
        print(f"{args.dest} is not empty", file=sys.stderr)
        return 2
    make_vault(args.dest, args.notes, args.seed, args.sections)
    print(f"wrote {args.notes} notes to {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
