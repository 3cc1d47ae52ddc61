"""Checks the monitoring files against each other (make test runs it from scripts/test-all).

- deploy/prometheus/alerts.yml: promtool accepts it and its unit tests (alerts.test.yml) pass;
  the group `subscriptions` has exactly the alerts of the metric contract, each with severity
  page or ticket, a summary, a description and a runbook_url whose anchor is a heading of
  docs/runbooks.md; every metric its expressions name is in deploy/prometheus/metrics.txt.
- deploy/prometheus/prometheus.yml: promtool accepts it (with the rules it loads).
- deploy/grafana/subscriptions.json: valid JSON, a Prometheus datasource variable every query
  uses, every panel (rows aside) has queries that promtool parses (Grafana's $__rate_interval
  and $__range read as 5m and 1h), and every metric in every query is in metrics.txt.

Usage: python3 Tests/Python/monitoring_check.py [-v]  (needs promtool and PyYAML: Debian's
prometheus and python3-yaml, which scripts/install-deps installs).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROMETHEUS = os.path.join(ROOT, "deploy", "prometheus")
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "subscriptions.json")
RUNBOOKS = os.path.join(ROOT, "docs", "runbooks.md")

# The alert names the metric contract fixes.
ALERTS = [
    "GoogleAcknowledgementBacklog", "NotificationsFailing", "NotificationsStuck", "NotificationsShed",
    "InboxOldestPending",
    "StoreAPIErrors", "StoreAPISlow", "StoreAPIRateLimited", "FeedLag", "WebhookLag", "WebhookDeadLetters",
    "ReconciliationFindingChanges", "AccessBeyondVerified", "ServiceDown", "ServiceNotReady",
]

# PromQL words that look like metric names: operators, modifiers, and the aggregations that may
# stand before `by`/`without`.
PROMQL_WORDS = {
    "and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset",
    "sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile", "count_values",
    "group", "inf", "nan",
}


def metric_families():
    """metrics.txt as {name: type}."""
    families = {}
    with open(os.path.join(PROMETHEUS, "metrics.txt")) as file:
        for line in file:
            line = line.strip()
            if line and not line.startswith("#"):
                name, kind, _services = line.split()
                families[name] = kind
    return families


def metric_names(expr):
    """The metric names a PromQL expression selects (series names, histogram suffixes kept)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals (label values, regexes)
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges and subqueries
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)  # label lists
    text = re.sub(r"\boffset\s+\S+", " ", text)
    names = set()
    for match in re.finditer(r"(?<![\w.$])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?", text):
        word, call = match.group(1), match.group(2)
        if call or word.lower() in PROMQL_WORDS:
            continue
        names.add(word)
    return names


def unknown_metrics(expr, families):
    """The names `expr` selects that are not a family of metrics.txt (or a histogram's series)."""
    unknown = []
    for name in sorted(metric_names(expr)):
        if name in families and families[name] != "histogram":
            continue
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        if base != name and families.get(base) == "histogram":
            continue
        unknown.append(name)
    return unknown


def github_anchors(markdown):
    """The anchors GitHub gives the headings of a Markdown text."""
    anchors = set()
    for line in markdown.splitlines():
        heading = re.match(r"#{1,6}\s+(.*)", line)
        if heading:
            title = heading.group(1).strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def promtool(*arguments, cwd=PROMETHEUS):
    return subprocess.run(["promtool", *arguments], cwd=cwd, capture_output=True, text=True)


class MetricNameParsing(unittest.TestCase):
    def test_names_are_read_out_of_functions_aggregations_and_matchers(self):
        expr = (
            'histogram_quantile(0.95, sum by (store, le) (rate(a_seconds_bucket{outcome=~"5xx|b_total"}[5m])))'
            " / on (store) group_left (x) sum without (instance) (b_total offset 1h) > 0.1"
            " or max(up{job=\"ledger\"}) unless count(c) and bool d"
        )
        self.assertEqual(metric_names(expr), {"a_seconds_bucket", "b_total", "up", "c", "d"})

    def test_a_histogram_series_counts_as_its_family(self):
        families = {"a_seconds": "histogram", "b_total": "counter"}
        self.assertEqual(unknown_metrics("rate(a_seconds_bucket[1m]) + a_seconds_count + b_total", families), [])
        self.assertEqual(unknown_metrics("a_seconds + b_total_count + c", families), ["a_seconds", "b_total_count", "c"])

    def test_anchors_follow_githubs_rule(self):
        self.assertEqual(github_anchors("# Runbooks\n## StoreAPIErrors\n## Health, metrics & logs"),
                         {"runbooks", "storeapierrors", "health-metrics--logs"})


class AlertRules(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(PROMETHEUS, "alerts.yml")) as file:
            cls.groups = yaml.safe_load(file)["groups"]
        cls.rules = [rule for group in cls.groups if group["name"] == "subscriptions" for rule in group["rules"]]

    def test_promtool_is_installed(self):
        self.assertIsNotNone(shutil.which("promtool"), "promtool missing: scripts/install-deps installs prometheus")

    def test_promtool_accepts_the_rules(self):
        result = promtool("check", "rules", "alerts.yml")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_the_unit_tests_of_the_rules_pass(self):
        result = promtool("test", "rules", "alerts.test.yml")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_promtool_accepts_the_scrape_config_and_the_rules_it_loads(self):
        result = promtool("check", "config", "prometheus.yml")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("1 rule files found", result.stdout)

    def test_the_group_holds_exactly_the_contracts_alerts(self):
        self.assertEqual([group["name"] for group in self.groups], ["subscriptions"])
        self.assertEqual(sorted(rule["alert"] for rule in self.rules), sorted(ALERTS))

    def test_every_alert_is_labelled_and_annotated(self):
        for rule in self.rules:
            with self.subTest(rule["alert"]):
                self.assertIn(rule["labels"]["severity"], {"page", "ticket"})
                self.assertEqual(set(rule["annotations"]), {"summary", "description", "runbook_url"})

    def test_every_runbook_url_names_a_section_of_the_runbooks(self):
        with open(RUNBOOKS) as file:
            anchors = github_anchors(file.read())
        for rule in self.rules:
            with self.subTest(rule["alert"]):
                url = rule["annotations"]["runbook_url"]
                path, _, anchor = url.partition("#")
                self.assertEqual(path, "docs/runbooks.md")
                self.assertEqual(anchor, rule["alert"].lower())
                self.assertIn(anchor, anchors)

    def test_every_unit_test_file_alert_is_a_rule(self):
        with open(os.path.join(PROMETHEUS, "alerts.test.yml")) as file:
            tests = yaml.safe_load(file)["tests"]
        tested = {case["alertname"] for test in tests for case in test.get("alert_rule_test", [])}
        fired = {case["alertname"] for test in tests for case in test.get("alert_rule_test", []) if case["exp_alerts"]}
        self.assertEqual(tested, set(ALERTS))
        self.assertEqual(fired, set(ALERTS))

    def test_every_metric_the_rules_name_is_in_the_contract(self):
        families = metric_families()
        for rule in self.rules:
            with self.subTest(rule["alert"]):
                self.assertEqual(unknown_metrics(rule["expr"], families), [])


class Dashboard(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(DASHBOARD) as file:
            cls.dashboard = json.load(file)
        cls.panels = []
        for panel in cls.dashboard["panels"]:
            cls.panels.append(panel)
            cls.panels.extend(panel.get("panels", []))

    def test_it_has_a_prometheus_datasource_variable(self):
        variables = self.dashboard["templating"]["list"]
        self.assertIn({"name": "datasource", "type": "datasource", "query": "prometheus"},
                      [{key: v[key] for key in ("name", "type", "query")} for v in variables])
        self.assertGreaterEqual(self.dashboard["schemaVersion"], 36)

    def test_one_row_per_concern(self):
        rows = [panel["title"] for panel in self.panels if panel["type"] == "row"]
        self.assertEqual(rows, [
            "Notifications", "Store APIs", "Google acknowledgements", "Account links",
            "Access and active subscriptions", "Reconciliation", "Event log and webhooks", "Change feed", "Services",
        ])

    def test_every_panel_queries_the_datasource_variable(self):
        for panel in self.panels:
            if panel["type"] == "row":
                continue
            with self.subTest(panel["title"]):
                self.assertTrue(panel.get("targets"), "no queries")
                self.assertEqual(panel["datasource"], {"type": "prometheus", "uid": "${datasource}"})
                for target in panel["targets"]:
                    self.assertTrue(target.get("expr", "").strip(), f"empty query {target.get('refId')}")
                    self.assertEqual(target["datasource"], panel["datasource"])

    def test_every_query_parses(self):
        queries = [target["expr"] for panel in self.panels for target in panel.get("targets", [])]
        rules = [{"record": f"dashboard:query{index}",
                  "expr": query.replace("$__rate_interval", "5m").replace("$__range", "1h")}
                 for index, query in enumerate(queries)]
        with tempfile.TemporaryDirectory() as directory:
            with open(os.path.join(directory, "queries.yml"), "w") as file:
                yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, file)
            result = promtool("check", "rules", "queries.yml", cwd=directory)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn(f"SUCCESS: {len(queries)} rules found", result.stdout)

    def test_panel_ids_are_unique(self):
        ids = [panel["id"] for panel in self.panels]
        self.assertEqual(len(ids), len(set(ids)))

    def test_every_metric_in_every_query_is_in_the_contract(self):
        families = metric_families()
        for panel in self.panels:
            for target in panel.get("targets", []):
                with self.subTest(panel["title"], query=target["expr"]):
                    self.assertEqual(unknown_metrics(target["expr"], families), [])

    def test_every_contract_metric_is_on_the_dashboard(self):
        shown = set()
        for panel in self.panels:
            for target in panel.get("targets", []):
                shown |= {re.sub(r"_(bucket|sum|count)$", "", name) for name in metric_names(target["expr"])}
        self.assertEqual(sorted(set(metric_families()) - shown), [])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], *sys.argv[1:]])
