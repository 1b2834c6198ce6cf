"""The operations' handlers: each takes a ``Call`` and answers the data of one row of ``operations.table.OPERATIONS``.

They sit above the projections (``review``, ``composite``, ``analysis``) and the execution runtime, which
they combine, and below ``service``, which validates, budgets and wraps their answers.
"""
