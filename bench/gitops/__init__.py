"""Git and GitHub: publishing reports, the PR comment's transport, the git hook."""
