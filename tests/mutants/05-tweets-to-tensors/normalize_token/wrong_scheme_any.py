# Mistake: takes any "scheme://" for a link, where the docstring names two schemes: an
# "ftp://" or "file://" token becomes <URL> instead of being lowercased.
def normalize_token(token):
    if len(token) > 1 and token.startswith("@"):
        return "<USR>"
    if "://" in token:
        return "<URL>"
    return token.lower()
