"""From numbers to pages: tables, charts, report pages and the index."""
