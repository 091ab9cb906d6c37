"""One writer per format, the readers' counterparts: :mod:`~.yaml` (a task document as YAML,
with its data form) and :mod:`~.btcpp` (BehaviorTree.CPP 4 XML that BT.CPP loads as written)."""
