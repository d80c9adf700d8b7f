# Mistake: the link test is case-sensitive, so "HTTPS://..." stays a (lowercased) word.
def normalize_token(token):
    if len(token) > 1 and token.startswith("@"):
        return "<USR>"
    if token.startswith(("http://", "https://")):
        return "<URL>"
    return token.lower()
