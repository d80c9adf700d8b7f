"""Errors the course's commands turn into one clear sentence instead of a traceback."""


class CourseError(Exception):
    """Bad input or set-up; the message says what is wrong and what to run."""
