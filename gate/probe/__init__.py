"""`gate probe`: prove, before a long run is paid for, that this stack can train this exact architecture.

Each step is a small function that returns a `Step` (pass / warn / fail / skip plus its evidence); `runner.py`
chains them and later steps are skipped once one they depend on fails. Steps that must survive a process boundary
(checkpoint resume, torchrun) run in subprocesses so a hidden in-memory state cannot make them pass.
"""
