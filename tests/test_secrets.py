"""Secrets never stored, private spans dropped: the pure logic (sidecar/text/secrets.py). What a user relies on:
each kind is found where people paste it, an ordinary sentence keeps every word, the placeholder says the kind and
never the secret, and no input (1 MB of key-like text, 100,000 tags) makes it slow enough to stall the process."""

from __future__ import annotations

import pytest

from sidecar.text import SECRET_KINDS, parse_redact, redact, strip_private
from sidecar.text.secrets import find

# one of each kind, as people paste them (the keys are made up, in each provider's published shape)
SECRETS = {
    "openai key": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0f",
    "anthropic key": "sk-ant-api03-Xy9zAb3cDe6fGh1iJk4lMn7oPq0rSt-uVwXyZ2aB_cDeF",
    "aws access key id": "AKIAIOSFODNN7EXAMPLE",
    "github token": "ghp_4fGh7jKl0mNp3qRs6tUv9wXy2zAb5cDe8fGh",
    "gitlab token": "glpat-x7Yz2Ab5Cd8Ef1Gh4Ij7",
    "slack token": "xoxb-2048596830-1738204951-Ab3Cd6Ef9Gh2Ij5Kl8",
    "stripe key": "sk_live_51Hx9Ab3Cd6Ef9Gh2Ij5Kl8Mn",
    "google api key": "AIzaSyD4fGh7jKl0mNp3qRs6tUv9wXy2zAb5cDe",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "card number": "4539 1488 0343 6467",
    "iban": "DE89 3704 0044 0532 0130 00",
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_shaped_kind_is_replaced_by_its_placeholder_at_any_position(kind):
    secret = SECRETS[kind]
    for text in (secret, f"here it is: {secret}", f"{secret} is the one", f"use ({secret}), ok?"):
        out, n = redact(text)
        assert n == 1, (kind, text, out)
        assert secret not in out and f"[redacted: {kind}]" in out, out


def test_the_words_around_a_secret_are_kept():
    out, n = redact("Deploy with sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0f tonight, thanks!")
    assert (out, n) == ("Deploy with [redacted: openai key] tonight, thanks!", 1)


def test_an_aws_secret_key_next_to_its_key_id_goes_too():
    text = "AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY for the backup bucket"
    out, n = redact(text)
    assert out == "[redacted: aws access key id] / [redacted: aws secret key] for the backup bucket"
    assert n == 2
    # alone, a 40-character word is not taken for one; named, it is
    assert redact("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")[1] == 0
    assert redact("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")[1] == 1


def test_a_private_key_block_goes_whole_closed_or_not():
    block = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5\nabc+def/ghi==\n-----END RSA PRIVATE KEY-----"
    assert redact(f"key:\n{block}\nthanks") == ("key:\n[redacted: private key]\nthanks", 1)
    cut = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nthanks, see you"
    assert redact(cut) == ("[redacted: private key]\nthanks, see you", 1)


def test_a_jwt_inside_a_url_is_the_jwt_alone():
    url = "https://app.example.com/cb?token=" + SECRETS["jwt"] + "&next=/home"
    assert redact(url) == ("https://app.example.com/cb?token=[redacted: jwt]&next=/home", 1)


def test_numbers_that_are_not_cards_or_ibans_are_kept():
    for text in (
        "4539 1488 0343 6468",  # fails Luhn
        "Order 1234567890123 shipped",  # no card network's prefix (and fails Luhn)
        "call +49 170 1234567 or 0170 1234567",
        "pi is 3.14159265358979323846",
        "0000 0000 0000 0000",
        "DE89 3704 0044 0532 0130 01",  # fails mod-97
        "XX89 3704 0044 0532 0130 00",  # no such country
        "the timestamps 1704067200 1704153600 1704153660",
    ):
        assert redact(text) == (text, 0), text


@pytest.mark.parametrize(
    "text, password",
    [
        ("my password is Hunter2!", "Hunter2"),
        ("pw: hunter22", "hunter22"),
        ("pw: sunshine", "sunshine"),
        ("the wifi password is 'correct horse battery'", "correct horse battery"),
        ("password for the router: Tr0ub4dor&3", "Tr0ub4dor&3"),
        ("mein Passwort ist Sommer2024.", "Sommer2024"),
        ("Kennwort: blau!Himmel", "blau!Himmel"),
        ("mon mot de passe est azerty123", "azerty123"),
        ("mi contraseña es perro1234", "perro1234"),
        ("minha senha é abc123xyz", "abc123xyz"),
        ("la mia password è Gatto_99", "Gatto_99"),
        ("mijn wachtwoord is Fiets2023", "Fiets2023"),
        ("мой пароль qwerty123", "qwerty123"),
        ("şifrem: Kedi1234", "Kedi1234"),
        ("密码是abc12345", "abc12345"),
        ("パスワードはneko2024", "neko2024"),
    ],
)
def test_a_password_stated_in_words_goes_and_the_sentence_stays(text, password):
    out, n = redact(text)
    assert n == 1 and password not in out and "[redacted: password]" in out, out


@pytest.mark.parametrize(
    "text",
    [
        "I forgot my password again",
        "my password is too weak",
        "the password is the same as before",
        "password: reset it tomorrow",
        "Passwort vergessen, kannst du helfen?",
        "mon mot de passe est trop court",
        "what is the wifi password?",
        "the PIN is on the back of the card",
        "the key is to keep going",
        "I changed my password yesterday",
        "reset your password: https://example.com/account/reset?step=2",
        "I noticed a spiderman pin on your purse. Is Spider-Man your favorite superhero?",
    ],
)
def test_talk_about_passwords_keeps_every_word(text):
    assert redact(text) == (text, 0)


def test_keep_leaves_those_kinds_as_written():
    text = f"{SECRETS['iban']} and {SECRETS['openai key']}"
    out, n = redact(text, keep={"iban"})
    assert out == f"{SECRETS['iban']} and [redacted: openai key]" and n == 1


def test_the_setting_parses_on_off_and_kinds():
    assert parse_redact("on").clean("pw: hunter22") == ("pw: [redacted: password]", 1)
    assert parse_redact("off").clean("pw: hunter22 <private>x</private>") == ("pw: hunter22 ", 0)
    keep = parse_redact("keep=card-number,IBAN")
    assert keep.keep == {"card number", "iban"} and str(keep) == "keep=card number,iban"
    with pytest.raises(ValueError, match="unknown kind 'passport'"):
        parse_redact("keep=passport")
    with pytest.raises(ValueError, match="expected on, off or keep="):
        parse_redact("sometimes")
    assert set(SECRET_KINDS) >= set(SECRETS) | {"aws secret key", "private key", "password"}


def test_private_spans_are_dropped_with_their_tags():
    assert strip_private("I live in Lyon <private>and I am seeing a therapist</private> since May") == (
        "I live in Lyon since May"
    )
    assert strip_private("a <PRIVATE>b</Private>c") == "a c"
    # nested: to the outermost close; unclosed: to the end; a stray close tag: dropped alone
    assert strip_private("a <private>b <private>c</private> d</private> e") == "a e"
    assert strip_private("keep this <private>but not this") == "keep this "
    assert strip_private("no </private>opener") == "no opener"
    assert strip_private("<private>x</private>" * 100_000 + "end") == "end"
    assert strip_private("<private>" * 100_000) == ""
    assert strip_private("a<b and c>d, <memory>x</memory>") == "a<b and c>d, <memory>x</memory>"


@pytest.mark.parametrize(
    "text",
    [
        "sk-" * 350_000,
        "sk-ant-" + "a1" * 500_000,
        "eyJ." * 250_000,
        "eyJabcdefgh1.eyJabcdefgh1." * 40_000,
        "1 " * 500_000,
        "4" * 1_000_000,
        "4111-" * 200_000,
        "AKIA" * 250_000,
        "AKIAIOSFODNN7EXAMPLE " * 48_000,
        "DE89 " * 200_000,
        "password is " * 90_000,
        "pw: " * 250_000,
        "-----BEGIN PRIVATE KEY-----" * 30_000,
        "-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----" * 20_000,
        "<private>" * 100_000,
        "密码是" * 300_000,
        "a/" * 500_000,
    ],
    ids=lambda t: repr(t[:16]),
)
def test_a_megabyte_of_key_like_text_is_answered(text):
    """Linear: each runs in well under a second here; a pattern that backtracks quadratically would take hours
    on these (the test suite's timeout catches it). The speed is measured by `scripts/bench.py secrets`."""
    out, n = redact(strip_private(text))
    assert isinstance(out, str) and n >= 0
    assert find(out) == []  # what remains holds nothing more to replace
