from python_udfs.text import canonicalize, substrings, words


def test_canonicalize_makes_constants_match():
    assert canonicalize("in September 2013") == canonicalize("in March 1999") == "in 1000-10-10"
    assert canonicalize("on 2013/5/3 refers to date = '2013-05-03'") == "on 1000-10-10 refers to date = '1000-10-10'"
    assert canonicalize("quantity greater than 40") == "quantity greater than 100"
    assert canonicalize("station no.1 and 3.5%") == "station no.1 and 100"
    assert canonicalize("may I see the top 10") == "may I see the top 100"
    assert canonicalize("A12 and T1.col stay") == "A12 and T1.col stay"
    assert canonicalize(None) is None


def test_substrings_respect_bounds_and_limit():
    subs = substrings("How many non-carcinogenic molecules are there?", 2, 3)
    assert ("non-carcinogenic molecules", 2) in subs
    assert all(2 <= n <= 3 for _, n in subs)
    assert len(substrings("word " * 5000, 1, 8, limit=400)) <= 400
    assert substrings("", 1, 3) == [] and words("a, b!") == ["a", "b"]
