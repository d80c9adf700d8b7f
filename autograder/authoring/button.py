"""The "Grade my notebook" button at the end of each notebook.

Light to import (the notebook's last cell runs in every kernel, the grading kernel
included): the grader itself (autograder.grading.selfgrade) is loaded only when the button is
pressed.
"""

from __future__ import annotations

from pathlib import Path


def grade_button(filename: str) -> None:
    """Show a button that grades the saved `filename` (hidden tests included) and prints
    the report under it. The learner saves the notebook first (Ctrl+S)."""
    import ipywidgets as widgets
    from IPython.display import display

    button = widgets.Button(description="Grade my notebook", icon="check",
                            tooltip="every test, hidden ones included (save first)",
                            layout=widgets.Layout(width="auto"))
    output = widgets.Output()

    def on_click(_):
        from autograder.errors import CourseError
        from autograder.grading.selfgrade import report

        output.clear_output()
        with output:
            print(f"Grading the saved {filename} (about half a minute) ...")
            try:
                print(report(Path(filename).resolve()))
            except CourseError as error:
                print(f"Cannot grade it: {error}")

    button.on_click(on_click)
    display(widgets.VBox([button, output]))  # shown once: the function returns nothing
