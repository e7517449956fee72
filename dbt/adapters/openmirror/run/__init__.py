"""One model's run as dbt sees it: its config, what it reports, its warnings and the audit of held changes."""
