# Another correct answer: regular expressions.
import re


def normalize_token(token):
    if re.fullmatch(r"@.+", token, flags=re.S):
        return "<USR>"
    if re.match(r"https?://", token, flags=re.I):
        return "<URL>"
    return token.lower()
