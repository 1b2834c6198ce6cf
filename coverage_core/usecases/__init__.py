"""Use cases that call the service like any client: the CI verdicts (``ci``). Nothing below them imports
them. (The dashboard's projection is rows of the table: ``operations.dashboard_view``.)
"""
