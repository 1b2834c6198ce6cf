"""Use cases that call the service like any client: the CI verdicts (``ci``) and the dashboard's one
projection (``dashboard_view``). Nothing below them imports them.
"""
