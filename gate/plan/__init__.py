"""`gate plan`: memory floor of the training states and the cost of a run, before anyone books a cluster."""
