"""`crag serve --keys FILE`: the file's format, its permissions, $CRAG_API_KEY's user, and finding a key's user;
and the checkpointer keys of owned threads."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crag.serve.keys import DEFAULT_USER, KeysError, Users, identities, is_local, load_keys, parse_keys
from crag.threads import InvalidThreadId, check_thread_key, owned_thread

KEY_A, KEY_B = "a" * 20, "B-0123456789_abcdef"

users = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}", fullmatch=True).filter(lambda u: u != DEFAULT_USER)
keys = st.from_regex(r"[A-Za-z0-9._~+/=-]{16,64}", fullmatch=True)
thread_ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}", fullmatch=True)


@given(st.dictionaries(users, keys, min_size=1, max_size=8).filter(lambda d: len(set(d.values())) == len(d)), st.data())
def test_any_well_formed_file_parses_back(table, data):
    lines = []
    for user, key in table.items():
        lines += data.draw(st.lists(st.sampled_from(["", "   ", "# a comment", "  # user key"]), max_size=2))
        pad = data.draw(st.sampled_from([" ", "\t", "   "]))
        lines.append(f"{data.draw(st.sampled_from(['', ' ']))}{user}{pad}{key}{data.draw(st.sampled_from(['', ' ']))}")
    assert parse_keys("\n".join(lines)) == table


@given(users, keys, st.text(alphabet="abc xyz", min_size=1, max_size=10).filter(lambda t: t.strip()))
def test_a_line_of_more_than_two_fields_is_refused_naming_it(user, key, extra):
    with pytest.raises(KeysError, match=r"line 2: expected `user key`"):
        parse_keys(f"# users\n{user} {key} {extra}\n")


@given(users)
def test_a_line_of_one_field_is_refused(user):
    with pytest.raises(KeysError, match="line 1: expected `user key`, got 1"):
        parse_keys(user)


@pytest.mark.parametrize(
    "text, message",
    [
        (f"alice {KEY_A}\nalice {KEY_B}", "line 2: user 'alice' is listed twice"),
        (f"alice {KEY_A}\nbob {KEY_A}", "line 2: 'bob' has the same key as 'alice'"),
        ("alice short", "must be 16-256"),
        (f"alice {'k' * 15}", "must be 16-256"),
        (f"alice {KEY_A}\nbob {'é' * 20}", "line 2: the key of 'bob'"),
        (f"al/ice {KEY_A}", "invalid user name 'al/ice'"),
        (f"-alice {KEY_A}", "invalid user name"),
        (f"default {KEY_A}", "'default' is $CRAG_API_KEY's"),
        ("# nobody\n\n", "lists no key"),
    ],
)
def test_malformed_files_are_refused_saying_why(text, message):
    with pytest.raises(KeysError, match=re.escape(message)):
        parse_keys(text)


def test_the_file_must_exist_and_be_readable_by_its_owner_only(tmp_path):
    file = tmp_path / "keys"
    with pytest.raises(KeysError, match="does not exist"):
        load_keys(file)
    file.write_text(f"alice {KEY_A}\n")
    for mode in (0o644, 0o640, 0o604, 0o620):
        file.chmod(mode)
        with pytest.raises(KeysError, match=f"mode {mode:04o}.*chmod 600"):
            load_keys(file)
    file.chmod(0o600)
    assert load_keys(file) == {"alice": KEY_A}
    with pytest.raises(KeysError, match="not a file"):
        load_keys(tmp_path)


def test_crag_api_key_is_the_default_user(tmp_path):
    file = tmp_path / "keys"
    file.write_text(f"alice {KEY_A}\n")
    file.chmod(0o400)
    assert identities(None, None) == {}
    assert identities("s3cret", None) == {DEFAULT_USER: "s3cret"}
    assert identities("s3cret", file) == {DEFAULT_USER: "s3cret", "alice": KEY_A}
    with pytest.raises(KeysError, match="also the key of 'alice'"):
        identities(KEY_A, file)


def test_a_key_finds_its_user_and_nothing_else():
    found = Users({"alice": KEY_A, "bob": KEY_B})
    assert found.user_of(KEY_A.encode()) == "alice" and found.user_of(KEY_B.encode()) == "bob"
    assert found.user_of(KEY_A[:-1].encode()) is None and found.user_of(b"") is None and found.user_of(None) is None
    assert not Users({}) and len(found) == 2


def test_local_hosts():
    assert is_local("127.0.0.1") and is_local("localhost") and is_local("::1") and is_local("[::1]")
    assert not is_local("0.0.0.0") and not is_local("192.168.1.2") and not is_local("::")


@given(users, thread_ids, users, thread_ids)
def test_no_thread_id_names_another_users_thread(alice, one, bob, other):
    mine = owned_thread(alice, one)
    assert check_thread_key(mine) == mine
    assert mine != owned_thread(None, other)  # nor an unowned thread (the CLI's, $CRAG_API_KEY's)
    if (alice, one) != (bob, other):
        assert mine != owned_thread(bob, other)


def test_owned_thread_keys_are_checked():
    assert owned_thread(None, "t1") == "t1" and owned_thread("alice", "t1") == "alice/t1"
    with pytest.raises(InvalidThreadId):
        owned_thread("alice", "a/b")
    with pytest.raises(ValueError, match="owner"):
        owned_thread("a/b", "t1")
    with pytest.raises(InvalidThreadId):
        check_thread_key("a b/t1")
