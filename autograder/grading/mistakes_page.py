"""The mistakes report as one page, `OUT/mistakes.html`, readable offline: no script, no
font or style from elsewhere, its charts inline SVG. Links lead to each student's feedback
page (`feedback/<student>/<assignment>.html`), at the exercise (autograder.grading.mistakes
builds what it shows)."""

from __future__ import annotations

import html
from urllib.parse import quote

from autograder.grading.mistakes import CHECK, HINT, TIMEOUT, UNANSWERED, top_mistakes

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:66rem;margin:2rem auto;padding:0 1rem;
color:#222;line-height:1.4}h1{font-size:1.5rem}h2{margin-top:2.2rem;border-bottom:2px solid
#ddd}h3{margin:1.6rem 0 .3rem}table{border-collapse:collapse;width:100%;margin:.4rem 0 1rem}
td,th{border-bottom:1px solid #e5e5e5;padding:.35rem .5rem;text-align:left;vertical-align:top}
th{font-weight:600;font-size:.85rem;color:#555}pre{white-space:pre-wrap;margin:0;
font-size:.8rem;background:#f6f8fa;padding:.3rem .4rem;border-radius:4px}
.bar{display:inline-block;height:.7rem;background:#cf222e;border-radius:2px;
vertical-align:middle}.n{white-space:nowrap;font-variant-numeric:tabular-nums}
.kind{font-size:.75rem;border-radius:3px;padding:0 .3rem;background:#eee;color:#444;
white-space:nowrap}.hidden{background:#fff1c2}.who a{margin-right:.2rem;white-space:nowrap}
table.groups{table-layout:fixed}.groups th:nth-child(1){width:4.5rem}
.groups th:nth-child(2){width:36%}.groups th:nth-child(3){width:34%}
.top li{margin:.3rem 0}.lead{color:#555}.ok{color:#1a7f37}small{color:#666}
"""
KIND_LABEL = {HINT: "hint", CHECK: "check", UNANSWERED: "not answered", TIMEOUT: "time-out",
              "crash": "crash"}
GREEN, RED, GREY = "#2da44e", "#cf222e", "#afb8c1"


def feedback_link(student: str, assignment: str, exercise: str = "") -> str:
    """The page's link to a student's feedback page (at `exercise`'s heading)."""
    anchor = f"#ex-{quote(exercise)}" if exercise else ""
    return f"feedback/{quote(student)}/{quote(assignment)}.html{anchor}"


def _who(students, assignment: str, exercise: str = "") -> str:
    return " ".join(f"<a href='{feedback_link(s, assignment, exercise)}'>{html.escape(s)}</a>"
                    for s in sorted(students))


def chart(exercises) -> str:
    """A bar per exercise, in the page's order: passed, lost with an answer, not answered."""
    several = len({e.assignment for e in exercises}) > 1
    row, label_w, bar_w = 26, 260, 420
    height = row * len(exercises) + 30
    parts = [f"<svg role='img' aria-label='share of the class that passed each exercise' "
             f"width='{label_w + bar_w + 150}' height='{height}' "
             "xmlns='http://www.w3.org/2000/svg' font-family='system-ui,sans-serif' "
             "font-size='12'>"]
    for i, e in enumerate(exercises):
        y, n = 8 + i * row, max(1, len(e.graded))
        blank = len({s for g in e.groups if g.kind == UNANSWERED for s in g.students})
        shares = [(len(e.passed), GREEN), (len(e.lost) - blank, RED), (blank, GREY)]
        x = label_w
        parts.append(f"<text x='{label_w - 8}' y='{y + 14}' text-anchor='end'>"
                     + (f"{html.escape(e.assignment)} " if several else "")
                     + f"{html.escape(e.name)}</text>")
        for count, colour in shares:
            width = bar_w * count / n
            if width:
                parts.append(f"<rect x='{x:.1f}' y='{y}' width='{width:.1f}' height='18' "
                             f"fill='{colour}'><title>{count} of {n}</title></rect>")
            x += width
        parts.append(f"<text x='{label_w + bar_w + 8}' y='{y + 14}'>{len(e.passed)} of "
                     f"{len(e.graded)} passed</text>")
    y = height - 8
    for j, (name, colour) in enumerate((("passed", GREEN), ("lost points", RED),
                                         ("not answered", GREY))):
        x = label_w + j * 130
        parts.append(f"<rect x='{x}' y='{y - 10}' width='12' height='12' fill='{colour}'/>"
                     f"<text x='{x + 17}' y='{y}'>{name}</text>")
    return "".join(parts) + "</svg>"


def render(analysis: dict, title: str) -> str:
    e = html.escape
    exercises = analysis["exercises"]
    parts = [f"<!doctype html><html lang='en'><meta charset='utf-8'><title>{e(title)}</title>"
             f"<style>{_STYLE}</style><h1>{e(title)}</h1>",
             f"<p class='lead'>{analysis['students']} student(s), "
             f"{', '.join(map(e, analysis['assignments']))}. Built from the results of the "
             "last grading: each failing check's message, grouped by the mistake it names "
             "(its hint, else the check). Hidden tests' code is never shown.</p>"]
    top = top_mistakes(analysis)
    parts.append("<h2 id='top'>The most common mistakes</h2>")
    if top:
        parts.append("<ol class='top'>" + "".join(
            f"<li><b>{e(g.title)}</b> <span class='n'>({len(g.students)} of "
            f"{len(ex.graded)} students)</span>: <a href='#{_anchor(ex.assignment, ex.name)}'>"
            f"{e(ex.assignment)} <code>{e(ex.name)}</code></a>"
            + (" <span class='kind hidden'>hidden tests only</span>" if g.hidden else "")
            + "</li>" for ex, g in top) + "</ol>")
    else:
        parts.append("<p>None: no check failed with a mistake of its own.</p>")
    follow = analysis["follow_up"]
    parts.append(f"<p><a href='#follow-up'>Follow up: {len(follow)} student(s)</a>"
                 + (f" &middot; <a href='#not-graded'>{len(analysis['not_graded'])} "
                    "submission(s) not graded</a>" if analysis["not_graded"] else "") + "</p>")
    if exercises:
        parts.append("<h2 id='exercises'>Exercises, the most points lost first</h2>"
                     + chart(exercises))
    for ex in exercises:
        parts.append(_exercise(ex))
    parts.append(_follow_up(follow))
    if analysis["not_graded"]:
        parts.append("<h2 id='not-graded'>Not graded</h2><table><tr><th>student</th>"
                     "<th>assignment</th><th>why</th></tr>" + "".join(
                         f"<tr><td class='who'>{_who([r.student], r.assignment)}</td>"
                         f"<td>{e(r.assignment)}</td><td>{e(r.fatal)}</td></tr>"
                         for r in analysis["not_graded"]) + "</table>")
    parts.append("<p><small>A student may be in several groups of one exercise (one per "
                 "failing check). <i>Hidden tests only</i>: Validate passes the mistake, "
                 "so say in class what it is. Examples are one student's message, names "
                 "taken out.</small></p></html>")
    return "\n".join(parts)


def _anchor(assignment: str, exercise: str) -> str:
    return quote(f"{assignment}-{exercise}")


def _exercise(ex) -> str:
    e = html.escape
    share = f"{len(ex.passed)} of {len(ex.graded)} passed"
    parts = [f"<h3 id='{_anchor(ex.assignment, ex.name)}'>{e(ex.assignment)} "
             f"<code>{e(ex.name)}</code> <small>({ex.points:g} points): {share}, "
             f"{ex.lost_share:.0%} lost points</small></h3>"]
    if not ex.groups:
        return parts[0] + "<p class='ok'>Everyone graded passed it.</p>"
    parts.append("<table class='groups'><tr><th>students</th><th>mistake</th>"
                 "<th>what one student got</th>"
                 "<th>who (their feedback)</th></tr>")
    for g in ex.groups:
        width = 6 * len(g.students) / max(1, len(ex.graded))
        check = f"<br><small>{e(g.test)}: {e(g.doc)}</small>" if g.kind == CHECK and g.doc \
            else ""
        parts.append(
            f"<tr><td class='n'>{len(g.students)} <span class='bar' style='width:"
            f"{width:.2f}rem'></span></td><td><span class='kind'>{KIND_LABEL[g.kind]}</span>"
            + (" <span class='kind hidden'>hidden tests only</span>" if g.hidden else "")
            + f" {e(g.title)}{check}</td><td>"
            + (f"<pre>{e(g.example)}</pre>" if g.kind in (HINT, CHECK) and g.example else "")
            + f"</td><td class='who'>{_who(g.students, ex.assignment, ex.name)}</td></tr>")
    return "\n".join(parts) + "</table>"


def _follow_up(follow) -> str:
    e = html.escape
    parts = ["<h2 id='follow-up'>Follow up</h2>"]
    if not follow:
        return parts[0] + "<p>No one: every student answered, ran and made no mistake twice.</p>"
    parts.append("<table><tr><th>student</th><th>why</th></tr>")
    for item in follow:
        reasons = []
        for sentence, places in item.reasons:
            links = ", ".join(
                f"<a href='{feedback_link(item.student, a, x)}'>{e(a)}"
                + (f" {e(x)}" if x else "") + "</a>" for a, x in places)
            reasons.append(f"<li>{e(sentence)} ({links})</li>")
        parts.append(f"<tr><td id='student-{quote(item.student)}'>{e(item.student)}</td>"
                     f"<td><ul>{''.join(reasons)}</ul></td></tr>")
    return "\n".join(parts) + "</table>"
