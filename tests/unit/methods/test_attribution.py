"""Citations are the code's: strip spans, sentence-to-strip support, abstentions, the model's reply tidied."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crag.answers.attribution import abstains, attribute, claim, grounded, support, terms
from crag.knowledge.refinement import decompose_spans
from crag.nodes.answering import format_knowledge, tidy
from crag.prompts import LOOPING_ANSWER, NO_KNOWLEDGE_ANSWER, UNSUPPORTED_ANSWER

QUESTION = "What is Anna Berg's occupation?"


def strip(text, title="", n=0):
    return {
        "text": text,
        "title": title,
        "score": 0.5,
        "selection_score": 0.5,
        "source": f"kb/{n}.txt",
        "origin": "internal",
        "doc": n,
        "start": 0,
        "end": len(text),
    }


STRIPS = [
    strip("Anna Berg was a Swedish painter. She painted the sea.", "Anna Berg", 0),
    strip("Carl Dahl is a footballer from Oslo.", "Carl Dahl", 1),
]


@given(
    st.lists(
        st.sampled_from(
            [
                "Dr. Smith",
                "went",
                "home.",
                "He",
                "sang!",
                "1.5",
                "\n\n",
                "  ",
                "\t",
                "e.g.",
                "x",
                "`.npmrc`",
                "~/.bashrc",
            ]
        ),
        max_size=60,
    ),
    st.sampled_from(["excerption", "fixed_num", "selection"]),
)
def test_every_strip_span_holds_exactly_that_strip(words, mode):
    text = " ".join(words)
    spans = decompose_spans(text, mode)
    for strip_text, start, end in spans:
        assert " ".join(text[start:end].split()) == strip_text
    assert [s for s, _, _ in spans] == [s for s, _, _ in decompose_spans(text, mode)]  # deterministic
    assert all(a[2] <= b[1] for a, b in itertools.pairwise(spans))  # in order, not overlapping


def test_a_sentence_cites_the_strips_that_state_its_claim():
    [citation] = attribute("Anna Berg was a Swedish painter.", QUESTION, STRIPS)
    assert citation["sources"] == [1] and grounded([citation])
    assert claim("Anna Berg was a Swedish painter.", QUESTION) == {"swedish", "painter"}


def test_a_sentence_no_strip_supports_cites_nothing():
    citations = attribute("She was a painter. She was born in Bergen in 1890.", QUESTION, STRIPS)
    assert [c["sources"] for c in citations] == [[1], []]
    assert [c["sentence"] for c in citations] == ["She was a painter.", "She was born in Bergen in 1890."]
    assert not grounded(attribute("She plays football in Oslo.", "Who is Anna Berg?", STRIPS[:1]))


def test_restating_the_question_is_not_a_claim():
    assert attribute("Anna Berg's occupation is...", QUESTION, STRIPS)[0]["sources"] == []


def test_sentence_spans_point_into_the_answer():
    answer = "She was a painter.  She sang."
    for c in attribute(answer, QUESTION, STRIPS):
        assert answer[c["start"] : c["end"]] == c["sentence"]


def test_dotted_names_count_whole_and_by_parts():
    assert {"json.dump", "json", "dump", "sort_key"} <= terms("Call json.dumps with sort_keys")


def test_abstentions():
    assert all(abstains(a) for a in (NO_KNOWLEDGE_ANSWER, UNSUPPORTED_ANSWER, LOOPING_ANSWER))
    assert abstains("I don't know.") and abstains("The passages do not mention it.")
    assert not abstains("Anna Berg was a painter.") and not abstains("Knowing this, she painted.")
    # behind a lead-in
    for declined in (
        "The answer to the question is: I don't know.",
        "Sorry, but I cannot answer that.",
        "I'm sorry, I don't know.",
        "Answer is unknown.",
    ):
        assert abstains(declined), declined
    assert not abstains("The answer to the question is: mut.") and not abstains("Sorry is a song by Madonna.")


def test_tidy_and_knowledge_format():
    assert tidy("  Answer: She was a painter [1] [2, 3].\n") == "She was a painter."
    # a knowledge title the model copied in front of its answer goes when the rest or the question names it
    titles = ["Django Reinhardt", "Ken Keyes Jr."]
    assert tidy("Django Reinhardt: Django Reinhardt was a guitarist.", titles) == "Django Reinhardt was a guitarist."
    assert tidy("django reinhardt: Born in Liberchies.", titles, "Where was Django Reinhardt born?") == (
        "Born in Liberchies."
    )
    # … and stays when it may be the answer
    assert tidy("Ken Keyes Jr.: He wrote it.", titles, "Who is the author of Facing the Future?") == (
        "Ken Keyes Jr.: He wrote it."
    )
    assert tidy("Carl Dahl: a footballer.", titles) == "Carl Dahl: a footballer."  # not a knowledge title
    # a page's <title> or a heading is no name that answers: it goes too
    page = "Transfer Data Between Threads with Message Passing - The Rust Programming Language"
    heading = "Running Code on Cleanup with the Drop Trait"
    for title in (page, heading, "os — Miscellaneous operating system interfaces", "Rc<T> | Rust Book"):
        assert tidy(f"{title}: Channels send values.", [title], "How do threads talk?") == "Channels send values."
    assert tidy("Ken Keyes Jr.: He wrote it.", [page, *titles], "Who wrote it?") == "Ken Keyes Jr.: He wrote it."
    # a title copied in front of the model's decline leaves the decline (npm's documentation)
    for reply in ("npm-update - I don't know.", "npm-update: I don't know.", "NPM-UPDATE \u2014 I don't know."):
        assert tidy(reply, ["npm-update", "npm"], "script that runs before publish") == "I don't know."
    assert tidy("npm-updates - I don't know.", ["npm-update"]) == "npm-updates - I don't know."  # not the title
    assert tidy("npm-update - runs npm update.", ["npm-update"]) == "npm-update - runs npm update."
    assert format_knowledge(STRIPS) == (
        "Anna Berg: Anna Berg was a Swedish painter. She painted the sea.\n\n"
        "Carl Dahl: Carl Dahl is a footballer from Oslo."
    )


def test_a_copied_title_claims_nothing():
    """Trying libffi's manual: "The Basics (libffi: …): The Closure API is not thread-safe." was cited
    to the Thread Safety page because the copied title's words counted as the sentence's claim. `generate`
    drops such a title before the answer is attributed (`tidy`), so attribution needs no rule of its own."""
    from crag.nodes.answering import tidy

    title = "The Basics (libffi: the portable foreign function interface library)"
    strips = [
        strip("ffi_prep_cif returns FFI_BAD_ABI if the abi parameter is invalid.", title, 0),
        strip(
            "libffi is not completely thread-safe.",
            "Thread Safety (libffi: the portable foreign function interface library)",
            1,
        ),
    ]
    question = "what does ffi_prep_cif return if the abi is invalid"
    titles = [s["title"] for s in strips]
    echo = tidy(f"{title}: ffi_cif returns a status code of type ffi_cif_status.", titles, question)
    assert echo == "ffi_cif returns a status code of type ffi_cif_status."
    assert [c["sources"] for c in attribute(echo, question, strips)] == [[]]
    right = tidy(f"{title}: It returns FFI_BAD_ABI.", titles, question)
    assert [c["sources"] for c in attribute(right, question, strips)] == [[1]]


def test_a_strip_about_another_subject_supports_nothing():
    """ "Borysławice is a village in … Gmina Fredropol." states every word it adds, copied from a strip
    about Borysławka: without the subject rule that answer to an unanswerable question was grounded."""
    question = "In what country is Borysławice?"
    namesake = strip("Borysławka is a village in the administrative district of Gmina Fredropol, Poland.", "", 0)
    draft = "Borysławice is a village in the administrative district of Gmina Fredropol, Poland."
    assert not grounded(attribute(draft, question, [namesake]))
    own = strip("Borysławice is a village in Gmina Fredropol, Poland.", "", 1)
    citations = attribute(draft, question, [namesake, own])
    assert [c["sources"] for c in citations] == [[2]]  # numbering keeps the skipped strip's place
    # the title names the subject too, and a question whose rarest word is common names none
    titled = strip("A village in the administrative district of Gmina Fredropol, Poland.", "Borysławice", 0)
    assert grounded(attribute(draft, question, [titled]))
    assert grounded(attribute("It is in Poland, in Gmina Fredropol.", "Which country is it in?", [namesake]))


def test_the_subject_is_the_rarest_word_and_code_counts_by_its_parts():
    from crag.answers.attribution import about, subject

    assert subject("What is Anna Berg's occupation?") == [{"berg"}]
    assert subject("Who is the father of the bride?") == []  # nothing rare enough to name a subject
    named = subject("How do I get json.dumps to sort keys?")
    assert about(named, terms("json: Encoding basic Python objects")) and not about(named, terms("pickle module"))


def test_a_strip_names_a_subject_by_a_part_of_its_identifier():
    from crag.answers.attribution import concerns, names, states, subject

    question = "Zipping two lists of different lengths drops the extra items. How do I pad the short one?"
    assert subject(question) == [{"zip"}]
    itertools_strip = strip("class zip_longest(builtins.object) | zip_longest(iter1 [,iter2 [...]], [fillvalue=None])")
    other = strip("class chain(builtins.object) | chain(*iterables) --> chain object", n=1)  # another document
    assert concerns(question, [itertools_strip, other]) == [True, False]
    assert {"zip", "longest", "zip_longest"} <= names(itertools_strip)
    # a part names; it supports no claim ("extract_dir" does not state "extracting files")
    shutil_strip = strip("`extract_dir` is the name of the target directory, where the archive is unpacked.")
    assert "extract" not in states(shutil_strip)
    assert not grounded(attribute("Extracting is tricky.", "how to unpack an archive", [shutil_strip]))
    # the question's identifier stays whole: a strip must name check_output, not merely "output"
    assert concerns("check_output how to merge the error output", [strip("the output of a command")]) == [False]


def test_a_function_word_typed_without_its_apostrophe_names_no_subject():
    from crag.answers.attribution import concerns, subject

    # "whats" (Zipf 3.9) was the rarest word here, so no strip could be about the question
    question = "show whats the time in los angeles right now from the terminal"
    assert subject(question) == []
    strip = {"title": "date", "text": "$ date --date='TZ=\"America/Los_Angeles\" 09:00 next Fri'"}
    assert concerns(question, [strip]) == [True]
    assert subject("whos the author of pyflakes") == [{"pyflak"}]
    assert subject("hows Anna Berg doing, isnt she retired") == [{"berg"}]


def test_a_strip_of_a_document_the_question_names_is_about_what_it_asks():
    """The rarest word of a question about a tool is often a detail the manual does not spell
    ("node_modules"); a strip of the manual the question names (its title) may still support the answer."""
    from crag.answers.attribution import concerns, named_document, quotable

    question = "When searching a project recursively, which grep option skips a folder such as node_modules?"
    text = "--exclude-dir=GLOB Skip any command-line directory whose base name matches GLOB."
    assert concerns(question, [strip(text, "grep", 0)]) == [True]
    for title in ("", "ripgrep", "grep (Plan 9)"):  # untitled, or a title with a word the question lacks
        assert concerns(question, [strip(text, title, 0)]) == [False]
    assert quotable(question, [scored(text, 0.7, "grep")], 0.625) == 1
    assert quotable(question, [scored(text, 0.7, "ripgrep")], 0.625) is None
    assert named_document("git stash only staged changes, keep the unstaged ones", "git-stash")
    assert named_document("json.dumps sort keys", "json") and not named_document("json.dumps sort keys", "")
    # a namesake's title has a word the question lacks
    assert not named_document("In what city was Annika Billstam born?", "Annika Sörenstam")
    assert named_document("In what city was Annika Billstam born?", "Annika Billstam")


@pytest.mark.parametrize(
    "question, phrase",
    [
        ("Who is the author of Facing the Future?", "Facing the Future"),
        ("Who was the director of You and I?", "You and I"),
        ("Who was the producer of The Lord of the Rings?", "The Lord of the Rings"),
        ("What is the capital of New South Wales?", "New South Wales"),
        ("What is George Lewis's occupation?", "George Lewis"),  # the question's possessive is not the name's
        ("Who is the author of Skinner's Rules?", "Skinner's Rules"),
        ("Who is the father of the bride?", None),  # no capitalised name
        ("Which Python module reads CSV?", None),  # one capitalised word at a time is no phrase
        ("Facing the Future: who wrote it?", None),  # the first word is a sentence's capital
    ],
)
def test_a_named_phrase_is_a_run_of_capitalised_words_joined_by_small_words(question, phrase):
    from crag.answers.attribution import named_phrase

    assert named_phrase(question) == phrase


def test_a_question_of_common_words_is_about_its_named_phrase_whole():
    """No rare word names "Facing the Future"; a strip on "Looking Forward" that says "future" and
    "author" supported "The author of Facing the Future is Ken Keyes Jr."."""
    from crag.answers.attribution import concerns, quotable

    question = "Who is the author of Facing the Future?"
    other = strip("Looking Forward is a speculative look at the future. Author Ken Keyes Jr. wrote it.", "", 0)
    own = strip("Facing the Future is a 1990 novel by Ann Lee.", "", 1)
    titled = strip("A 1990 novel by Ann Lee.", "Facing the Future", 2)
    assert concerns(question, [other, own, titled]) == [False, True, True]
    assert not grounded(attribute("The author of Facing the Future is Ken Keyes Jr.", question, [other]))
    assert grounded(attribute("The author is Ann Lee.", question, [other, own]))
    assert quotable(question, [{**other, "score": 0.9, "selection_score": 0.9, "origin": "internal"}], 0.5) is None
    # with a rare word the rarest word names the subject, as before: the phrase is not required
    assert concerns("What is Anna Berg's occupation?", [strip("Berg was a painter.", "", 0)]) == [True]


LONG = "Her harbour scenes hang in Stockholm's museum."  # what makes a strip say enough to be quoted


def scored(text, score, title="", n=0, origin="internal"):
    return {**strip(text, title, n), "score": score, "selection_score": score, "origin": origin}


def test_the_quoted_strip_is_the_best_scored_one_about_the_subject():
    from crag.answers.attribution import quotable

    strips = [
        scored("Anna Berg was a Swedish painter of harbours.", 0.7, "", 0),
        scored(
            "Carl Dahl is a footballer from Oslo who plays as a striker.", 0.95, "Carl Dahl", 1
        ),  # best, not about Berg
        scored("She painted the sea off Gotland.", 0.8, "Anna Berg", 2),  # the title names the subject
        scored("Berg's works hang in Stockholm's museums.", 0.4, "", 3),  # about Berg, below the threshold
    ]
    assert quotable(QUESTION, strips, 0.5) == 3
    assert quotable(QUESTION, strips, 0.75) == 3 and quotable(QUESTION, strips, 0.85) is None
    assert quotable(QUESTION, [], 0.0) is None
    tie = [scored(f"Anna Berg {verb} {LONG}", 0.6, "", n) for n, verb in enumerate(("painted", "sailed"))]
    assert quotable(QUESTION, tie, 0.5) == 1  # ties go to the strip shown first
    # a question whose rarest word is common names no subject: any strip that scores may be quoted
    assert quotable("Who is the father of the bride?", strips, 0.9) == 2


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["Anna Berg painted.", "Carl Dahl played.", "Berg sailed.", "A ship."]).map(
                lambda text: f"{text} {LONG}"
            ),
            st.floats(-1, 1),
            st.sampled_from(["", "Anna Berg", "Carl Dahl"]),
        ),
        max_size=8,
    ),
    st.floats(-1.5, 1.5),
)
def test_a_quote_always_clears_the_threshold_and_names_the_subject(rows, threshold):
    from crag.answers.attribution import about, named_document, quotable, subject

    strips = [scored(text, score, title, n) for n, (text, score, title) in enumerate(rows)]
    n = quotable(QUESTION, strips, threshold)
    eligible = [
        s
        for s in strips
        if s["score"] >= threshold
        and (about(subject(QUESTION), terms(f"{s['title']} {s['text']}")) or named_document(QUESTION, s["title"]))
    ]
    assert (n is None) == (not eligible)
    if n is not None:
        assert strips[n - 1]["score"] == max(s["score"] for s in eligible)


@pytest.mark.parametrize(
    "text, title, question",
    [
        ("Phil Williams Phil Williams may refer to:", "Phil Williams", "In what city was Phil Williams born?"),
        (
            "See Also - npm install - package-lock.json",
            "npm-ci",
            "on CI I want npm to install exactly what the lockfile says and fail if package.json disagrees",
        ),
        ("Anna Berg was a Swedish painter.", "", QUESTION),  # two things beyond the question: too little to quote
    ],
)
def test_a_strip_that_says_next_to_nothing_is_not_quoted(text, title, question):
    from crag.answers.attribution import quotable, says_something

    stub = scored(text, 0.99, title)
    assert not says_something(question, stub) and quotable(question, [stub], 0.5) is None
    fuller = scored("-U, --unlink-first Remove each file prior to extracting over it.", 0.7, "tar")
    assert says_something("tar extract over existing files", fuller)


def test_a_retrieved_strip_is_quoted_by_its_selection_score_a_web_strip_by_the_evaluator_s():
    from crag.answers.attribution import quotable

    text = f"Anna Berg painted seascapes. {LONG}"
    lifted = {**scored(text, 0.2), "selection_score": 0.8}  # stood out among its strips
    assert quotable(QUESTION, [lifted], 0.625) == 1
    web = {**scored(text, 0.2, origin="external"), "selection_score": 0.8}
    assert quotable(QUESTION, [web], 0.625) is None  # web strips were not graded: the evaluator's own score
    sunk = {**scored(text, 0.8), "selection_score": 0.2}
    assert quotable(QUESTION, [sunk, lifted], 0.625) == 2


def test_a_strip_is_about_the_subject_when_another_strip_of_its_document_names_it():
    from crag.answers.attribution import concerns

    question = "How can I see how many cache hits and misses my lru_cache-decorated function has had?"
    named = strip("lru_cache(maxsize=128, typed=False) Least-recently-used cache decorator.", "functools", 0)
    same_page = strip(
        "The wrapped function is instrumented with a cache_info() function that returns a named "
        "tuple showing hits, misses, maxsize and currsize.",
        "functools",
        0,
    )
    other_page = strip("Cache hits and misses are counted by the statistics module.", "statistics", 1)
    assert concerns(question, [named, same_page, other_page]) == [True, True, False]
    assert concerns(question, [same_page, other_page]) == [False, False]  # nothing names it: no document does
    draft = "You can see the cache statistics named tuple (hits, misses, maxsize, currsize) with f.cache_info()."
    assert grounded(attribute(draft, question, [named, same_page]))
    # "lru_cache" is no name, so the model's answer needs no strip that names it (quoting still does)
    assert grounded(attribute(draft, question, [same_page]))


def test_the_model_s_answer_needs_a_strip_naming_the_subject_only_when_the_subject_is_a_name():
    """The rule is there for namesakes, which are names: the rarest word of a task ("stdlib",
    "unmatched") is often one the manual never uses, and the 1.5B reader's right answers from it were
    withheld. A quote, with no reader's judgement behind it, still needs the rarest word."""
    from crag.answers.attribution import concerns, quotable, subject

    question = "python stdlib percentile cut points for a list of numbers"
    assert subject(question) == [{"stdlib"}] and subject(question, names_only=True) == []
    text = (
        "quantiles(data, *, n=4, method='exclusive') Divide data into n continuous intervals with equal "
        "probability. Returns a list of n - 1 cut points separating the intervals."
    )
    manual = scored(text, 0.9, "statistics")
    draft = "The `quantiles` function in the `statistics` module returns the cut points."
    assert [c["sources"] for c in attribute(draft, question, [manual])] == [[1]]
    assert concerns(question, [manual]) == [False] and quotable(question, [manual], 0.625) is None
    # a capitalised name stays the subject: a namesake's strip supports nothing
    assert subject("What is Anna Berg's occupation?", names_only=True) == [{"berg"}]
    namesake = strip("Anna Borg was a Swedish painter.", "Anna Borg", 0)
    assert not grounded(attribute("Anna Berg was a Swedish painter.", "What is Anna Berg's occupation?", [namesake]))


def test_a_one_letter_option_is_a_term_with_its_dash():
    """`-a` is not the article "a": the 1.5B's right answer to "which flag makes ls show hidden files"
    claimed nothing and was replaced by a quote of the manual's header."""
    assert {"-a", "--all"} <= terms("-a, --all do not ignore entries starting with .")
    assert "a" not in terms("a file") and "-a" not in terms("a well-known file")
    question = "which flag makes ls show hidden files"
    manual = strip("-a, --all do not ignore entries starting with . -A, --almost-all do not list . and ..", "ls")
    (cited,) = attribute("The `-a` flag makes ls show hidden files.", question, [manual])
    assert cited["sources"] == [1]
    assert not grounded(attribute("The `-l` flag makes ls show hidden files.", question, [manual]))


def test_support_counts_the_claims_uncommon_words():
    from crag.answers.attribution import claim, informative

    question = "python locate executable in PATH like unix which command"
    draft = (
        "The `shutil.which` function in Python is similar to the Unix `which` command: it gives the path of a program."
    )
    claimed = claim(draft, question)
    key = informative(draft, claimed)
    assert key == {"shutil.which", "shutil"} and {"similar", "function", "program"} <= claimed
    stated = terms("shutil.which(cmd, mode=os.F_OK | os.X_OK, path=None) Return the path to an executable.")
    assert support(claimed, stated) < 0.5 and support(claimed, stated, key) == 1.0
    # an option or inline code is a name, however common its letters: "-S" is the answer, "order" is not
    option = "The `-S` option sorts files by size in descending order."
    assert informative(option, claim(option, "ls sort by file size, biggest first")) == {"-s", "s", "descend"}
    # an option of digits is one as well, written bare or as code, as `terms` reads options
    for numeric in ("Give xargs the -0 option.", "Give xargs the `-0` option."):
        assert informative(numeric, claim(numeric, "xargs breaks on file names with spaces")) == {"-0", "0"}
    # a claim of common words only is counted whole
    plain = claim("She lived by the sea.", "Where did Anna Berg live?")
    assert plain == {"sea"} and informative("She lived by the sea.", plain) == plain


def test_among_strips_that_state_the_uncommon_words_the_one_that_states_more_of_the_claim_is_cited():
    """The demo's third question: "physicist" is the claim's one uncommon word, and three strips say it;
    only Becquerel's own page also says "engineer"."""
    strips = [
        strip(
            "The becquerel (symbol Bq) is the SI unit of radioactivity, named after the French physicist.",
            "Becquerel (unit)",
            1,
        ),
        strip(
            "Radioactivity was discovered in 1896 in uranium salts by a French physicist, Becquerel.",
            "Radioactivity",
            2,
        ),
        strip(
            "Henri Becquerel was a French physicist and engineer. In 1896 he discovered radioactivity.",
            "Henri Becquerel",
            3,
        ),
    ]
    (citation,) = attribute("Henri Becquerel was a French physicist and engineer.", "Who was Henri Becquerel?", strips)
    assert citation["sources"] == [3]
    # strips that state the claim equally are cited together, as before (at most MAX_CITATIONS)
    (both,) = attribute("He was a French physicist.", "Who was Henri Becquerel?", strips)
    assert both["sources"] == [1, 2]


@pytest.mark.parametrize(
    "draft, looping",
    [
        ("date: --iso-8601 date --iso-8601 date --iso-8601 date --iso-8601 date", True),
        (
            "Building Node.js: Building Node.js from a tarball URL: Building Node.js: Building Node.js from a tarball URL: Building Node.js: Building Node.js",
            True,
        ),
        ("Use git commit --amend --no-edit to add it; git commit --amend --no-edit keeps the message.", False),
        ("Use -k.", False),
        ("It supports find_package(Gtest_FLEX_FLAG_FLEX_FLAG_FLEX_FLEX_FLEX_FLEX_FLEX_FLEX_F", True),
        ("Set CMAKE_INSTALL_BINDIR, CMAKE_INSTALL_LIBDIR and CMAKE_INSTALL_INCLUDEDIR.", False),
        ("", False),
        ("I don't know. I don't know. I don't know. I don't know.", False),  # a decline, kept as one
    ],
)
def test_a_loop_is_a_four_word_run_three_times(draft, looping):
    from crag.answers.attribution import abstains, loops
    from crag.prompts import LOOPING_ANSWER

    assert loops(draft) is looping
    assert abstains(LOOPING_ANSWER)
