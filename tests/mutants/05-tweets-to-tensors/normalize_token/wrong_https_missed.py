# Mistake: only "http://" counts as a link, so https links (most of Twitter's) stay words.
def normalize_token(token):
    if len(token) > 1 and token.startswith("@"):
        return "<USR>"
    if token.lower().startswith("http://"):
        return "<URL>"
    return token.lower()
