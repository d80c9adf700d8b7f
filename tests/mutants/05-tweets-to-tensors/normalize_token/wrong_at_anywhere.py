# Mistake: any token containing "@" is taken for a mention (e-mail addresses, a lone "@").
def normalize_token(token):
    if "@" in token:
        return "<USR>"
    if token.lower().startswith(("http://", "https://")):
        return "<URL>"
    return token.lower()
