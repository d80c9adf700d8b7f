# Mistake: lists the link prefixes in lower and upper case only, so a mixed-case
# "Http://" link stays a (lowercased) word.
def normalize_token(token):
    if len(token) > 1 and token.startswith("@"):
        return "<USR>"
    if token.startswith(("http://", "https://", "HTTP://", "HTTPS://")):
        return "<URL>"
    return token.lower()
