"""Agent-facing projections: budgets, cursors, project context and review tasks."""
