"""compaction-bench: replay agent sessions through real agents' compaction strategies and score them.

The data flows one way: trace → replay → records → metrics → report. Heavy modules are imported
where they are used, so ``import bench`` stays cheap.
"""

__version__ = "0.1.0"
