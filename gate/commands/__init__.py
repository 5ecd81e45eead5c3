"""Use cases behind the faces: the CLI and the service both call these and only these."""
