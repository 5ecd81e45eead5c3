"""Reports for people and machines: Markdown for the pull request, JSON, JUnit, GitHub annotations."""
