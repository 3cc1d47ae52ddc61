"""The support console (`subctl console`) in Debian's headless chromium, driven by selenium.

Usage: console_check.py ROOT BIN_DIR WORK_DIR [SCREENSHOT_DIR]

Over a store simulator stack with mutual TLS (console_stack.py), with an operator console and a
read-only one (the `support` certificate, in every service's RPC_READ_ONLY):
- finds an account by each kind of id a customer can quote and sees its timeline and the
  access as of a chosen instant;
- opens an App Store and a Google Play payload and sees each verified again;
- runs every action through its confirmation and sees its audit event in the account's history
  (ledger GetHistory) under the operator's identity with the reason given;
- as read-only: masked store ids, no raw payloads, no action forms, actions refused;
- a product id, a notification type and subtype, and an account id holding HTML or script are
  shown as text and never run;
- a form posted to an action from another origin is refused and changes nothing.
Screenshots of the main pages go to SCREENSHOT_DIR (default WORK_DIR/screenshots).
Exit status 0 when every check holds; otherwise each failure is printed.
"""

import base64
import http.server
import json
import os
import sys
import threading
import time
import urllib.parse

from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from console_stack import Stack  # noqa: E402

ROOT, BIN_DIR, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
SHOTS = sys.argv[4] if len(sys.argv) > 4 else os.path.join(WORK, "screenshots")
os.makedirs(SHOTS, exist_ok=True)
failures = []

# Store data is hostile input: each of these must be shown as text and never run.
XSS_PRODUCT = "com.example.<img/src=x/onerror=window.__xss=1>"
XSS_ACCOUNT = "<script>window.__xss=2</script>\"'&mallory"
XSS_TYPE = "<script>window.__xss=3</script>"
XSS_SUBTYPE = "<img src=x onerror=window.__xss=4>"
ALICE = "alice"

POLICY = """capability pro
  apple com.example.pro.monthly
  google pro_sub
capability premium
  google premium_sub
"""


def check(condition, what):
    if condition:
        print(f"ok   {what}")
    else:
        print(f"FAIL {what}")
        failures.append(what)
        if driver is not None:
            print("     page:", driver.current_url, driver.find_element(By.TAG_NAME, "body").text[:300].replace("\n", " | "))
    return condition


# The webhook receiver: refuses everything until `accepting` is set, so events become dead
# letters; then takes them (a redelivery reaches it).
class Receiver(http.server.BaseHTTPRequestHandler):
    accepting = False
    received = []
    attempts = 0
    arrived = threading.Condition()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200 if Receiver.accepting else 500)
        self.end_headers()
        with Receiver.arrived:
            Receiver.attempts += 1
            if Receiver.accepting:
                Receiver.received.append(json.loads(body))
            Receiver.arrived.notify_all()

    @staticmethod
    def next_attempt(seen, timeout):
        """Waits until a delivery attempt after the `seen`-th arrives; the count then."""
        with Receiver.arrived:
            Receiver.arrived.wait_for(lambda: Receiver.attempts > seen, timeout)
            return Receiver.attempts

    def log_message(self, *args):
        pass


# Another origin: a page that posts a form to the console's grant action on load.
class Attacker(http.server.BaseHTTPRequestHandler):
    target = ""

    def do_GET(self):
        page = f"""<!doctype html><html><body>
<form id="f" method="post" action="{Attacker.target}/action/grant">
<input name="account" value="{ALICE}"><input name="capability" value="pro">
<input name="duration" value="30d"><input name="reason" value="cross-site grant">
<input name="confirm" value="yes"></form>
<script>document.getElementById('f').submit()</script></body></html>"""
        data = page.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def serve(handler):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


receiver = serve(Receiver)
with open(os.path.join(WORK, "webhooks.json"), "w") as f:
    json.dump({"endpoints": [{"name": "support-test", "url": f"http://127.0.0.1:{receiver.server_port}/hook",
                              "secrets": ["whsec_" + base64.b64encode(b"console-test-secret-32-bytes-long").decode()]}]},
              f)

stack = Stack(
    BIN_DIR, WORK, POLICY,
    storesim_env={"STORESIM_APPLE_PRODUCTS": "com.example.pro.monthly:pro:1m:2,com.example.premium.monthly:pro:1m:1,"
                  f"{XSS_PRODUCT}:evil:1m:1"},
    entitlement_env={"EVENT_LOG": "true", "WEBHOOK_ENDPOINTS_FILE": os.path.join(WORK, "webhooks.json"),
                     "WEBHOOK_MAX_AGE_SECONDS": "60"})
driver = None


def history(account):
    """The account's audit trail, newest first, as the ledger answers the operator."""
    return stack.call("ledger", "GetHistory", {"accountId": account, "pageSize": 100}).get("events", [])




try:
    # --- The data: alice holds an App Store and a Google Play subscription a month on; a hostile
    # account holds the hostile product; an inbox entry with a hostile type is refused.
    apple = stack.sim("apple/buy", {"productId": "com.example.pro.monthly"})
    original = apple["originalTransactionId"]
    stack.call("verifier", "VerifyApplePurchase",
               {"accountId": ALICE, "transactionId": apple["transactionId"], "idempotencyKey": "alice-apple"})
    google = stack.sim("google/buy", {"productId": "pro_sub"})
    token = google["purchaseToken"]
    stack.call("verifier", "VerifyGooglePurchase",
               {"accountId": ALICE, "packageName": "com.example.app", "productId": "pro_sub",
                "purchaseToken": token, "idempotencyKey": "alice-google"})
    hostile = stack.sim("apple/buy", {"productId": XSS_PRODUCT})
    stack.call("verifier", "VerifyApplePurchase",
               {"accountId": XSS_ACCOUNT, "transactionId": hostile["transactionId"], "idempotencyKey": "hostile"})
    stack.sim("clock/advance", {"by": "+31d"})
    stack.watch_changes(lambda change: change.get("subscription", {}).get("key", {}).get("storeId") == original
                        and any(e.get("storeType") == "DID_RENEW" for e in change.get("events", [])))
    check(True, "alice's App Store renewal reaches the ledger")
    chain = stack.sim("apple/transactions", {"transactionId": original})["transactions"]
    renewal, apple_order = chain[-1]["transactionId"], chain[-1]["orderId"]
    orders = [o["orderId"] for o in stack.sim("google/orders", {"purchaseToken": token})["orders"]]
    stack.call("ledger", "RecordNotification", {"entry": {
        "store": "STORE_APPLE", "environment": "ENVIRONMENT_SANDBOX", "notificationId": "hostile-notification-1",
        "notificationType": XSS_TYPE, "subtype": XSS_SUBTYPE, "status": "INBOX_STATUS_REJECTED",
        "lastError": "<b>refused</b>", "rawPayload": "not a JWS",
        "key": {"store": "STORE_APPLE", "environment": "ENVIRONMENT_SANDBOX", "storeId": original}}})

    # --- The browser.
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1440,1000", "--lang=en-US"]:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(60)
    wait = WebDriverWait(driver, 30)

    def css(selector):
        return driver.find_elements(By.CSS_SELECTOR, selector)

    def one(selector):
        try:
            return driver.find_element(By.CSS_SELECTOR, selector)
        except NoSuchElementException:
            return None

    def text(selector):
        element = one(selector)
        return element.text if element else None

    def no_script_ran(where):
        check(driver.execute_script("return window.__xss === undefined"), f"{where}: no hostile script ran")

    def fits(where):
        """The page needs no sideways scrolling in the 1,440-pixel window of a laptop screen."""
        wide = driver.execute_script(
            "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        check(wide[0] <= wide[1], f"{where} fits a laptop screen's width: {wide}")

    def shot(name, height=None):
        """The whole page, however long (at most 4,000 pixels), or its top `height` pixels."""
        height = height or driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(1440, min(max(height, 900), 4000))
        driver.save_screenshot(os.path.join(SHOTS, f"console-{name}.png"))
        driver.set_window_size(1440, 1000)

    operator_url = stack.console("operator")
    base = operator_url.split("/login", 1)[0]
    driver.get(f"{base}/")
    check("open the address" in driver.find_element(By.TAG_NAME, "body").text.lower() or
          "401" in driver.title, "without logging in, a page asks for the printed address")
    driver.get(operator_url)
    check(text("#whoami") == "operator · operator", f"the operator console says who it acts as: {text('#whoami')}")
    shot("home")

    # By keyboard alone: Tab to the search field, type, Enter.
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.common.action_chains import ActionChains
    for _ in range(15):
        if driver.switch_to.active_element.get_attribute("id") == "q":
            break
        ActionChains(driver).send_keys(Keys.TAB).perform()
    check(driver.switch_to.active_element.get_attribute("id") == "q", "Tab reaches the search field")
    ActionChains(driver).send_keys(ALICE + Keys.ENTER).perform()
    WebDriverWait(driver, 30).until(lambda d: one("#taken-as") is not None)
    check("account" in (text("#taken-as") or "").lower(), "a search typed and sent by keyboard is answered")

    def find(value):
        driver.get(f"{base}/find?q={urllib.parse.quote(value)}")
        return text("#taken-as") or ""

    for value, words, account in [
        (ALICE, "account", ALICE), (original, "original transaction", ALICE),
        (renewal, "transaction", ALICE), (apple_order, "order", ALICE), (apple_order.lower(), "order", ALICE),
        (token, "purchase token", ALICE),
        (orders[0], "order", ALICE), (hostile["originalTransactionId"], "original transaction", XSS_ACCOUNT),
    ]:
        taken = find(value)
        check(words in taken.lower(), f"find {value[:24]}… is taken as {words}: {taken!r}")
        links = [a for a in css("#results a.account-link") if a.text == account]
        no_script_ran(f"find {value[:24]}…")
        if check(len(links) >= 1, f"find {value[:24]}… links to {account!r}"):
            if value == orders[0]:
                shot("find")
            links[0].click()
            check(text("main h1") == account, f"the account page of {account!r} has its id as its title")
            no_script_ran(f"the account page of {account!r}")
    find("MK5TTTVWJH-nothing")
    check((text("#not-found") or "").startswith("Nothing found: nothing in the ledger matches"),
          f"a value nothing matches says so and what was tried: {text('#not-found')!r}")

    # The account page: both stores, the timeline and the access at an instant.
    account_url = f"{base}/account/{urllib.parse.quote(ALICE, safe='')}"
    driver.get(account_url)
    rows = css("#subscriptions tr.subscription")
    check(len(rows) >= 2, f"alice's subscriptions of both stores are listed ({len(rows)})")
    keys = [cell.text for cell in css("#subscriptions td.key")]
    check(original in keys and token in keys, "the operator sees whole store ids")
    check(len(css("#timeline section.capability[data-capability=pro] .interval.kind-paid")) >= 1,
          "the timeline draws pro's paid time")
    check(len(css("#timeline .now-line")) >= 1, "the timeline has the now line")
    # For screen readers: landmarks, every control labelled, the timeline in words; and nothing
    # inline that the Content-Security-Policy would have to allow.
    unlabelled = driver.execute_script("""
        return Array.from(document.querySelectorAll('input:not([type=hidden]), select, textarea, button'))
          .filter(e => e.tagName !== 'BUTTON' ? e.labels.length === 0 : !e.textContent.trim())
          .map(e => e.name || e.outerHTML.slice(0, 60));""")
    check(unlabelled == [], f"every control of the account page has a label: {unlabelled[:3]}")
    check(all(css(tag) for tag in ["header", "nav", "main"]), "the page has header, navigation and main landmarks")
    words = [li.get_attribute("textContent") for li in css("#timeline section.capability[data-capability=pro] li.interval-text")]
    check(any(w.startswith("paid from ") for w in words), f"the timeline is also told in words: {words[:1]}")
    inline = driver.execute_script(
        "return document.querySelectorAll('[style]').length + "
        "Array.from(document.scripts).filter(s => !s.src).length")
    check(inline == 0, f"no inline style or script on the account page ({inline})")
    shot("account")
    driver.get(f"{account_url}?at=2026-01-15T12:00")
    drawn = driver.execute_script(
        "return Array.from(document.querySelectorAll('#timeline line.instant-line, #timeline line.now-line'))"
        ".map(l => [l.getAttribute('class'), l.parentNode.tagName.toLowerCase(), l.getBBox().height])")
    check(drawn and all(parent == "svg" and height > 0 for _, parent, height in drawn)
          and sum(1 for c, _, _ in drawn if c == "instant-line") >= 1,
          f"the instant picked and now are drawn as lines on each timeline: {drawn}")
    granted = text("#access-at li[data-capability=pro]") or ""
    check("until" in granted.lower() and "not" not in granted.lower(), f"pro is granted on 2026-01-15: {granted!r}")
    driver.get(f"{account_url}?at=2025-12-31T12:00")
    before = text("#access-at li[data-capability=pro]") or ""
    check("not" in before.lower(), f"pro is not granted before the purchase: {before!r}")

    # Payloads, verified again on the spot: of each store, at least one (an App Store
    # notification; a Play push, whose token the verifier recorded) and none failing but those
    # read from Play's API, which has no push to show.
    driver.get(account_url)
    hrefs = [link.get_attribute("href") for link in css("#history tr.event a.payload")]
    verdicts = {"apple": [], "google": []}
    for href in hrefs:
        driver.get(href)
        about = driver.find_element(By.CSS_SELECTOR, "main p").text
        store = "apple" if " apple/" in about else "google" if " google/" in about else None
        verdict = one("#verification")
        if store and verdict is not None:
            verified = "verified" in (verdict.get_attribute("class") or "").split()
            verdicts[store].append((verified, verdict.text))
            if verified and not any(v for v, _ in verdicts[store][:-1]):
                check(len(text("#decoded") or "") > 40, f"{store}: the payload is shown decoded")
                shot(f"payload-{store}")
    for store, found in verdicts.items():
        check(any(v for v, _ in found), f"{store}: a payload is verified again: {found[:3]}")
        unexplained = [t for v, t in found if not v and not t.startswith("Not a push")]
        check(not unexplained, f"{store}: no payload fails verification: {unexplained[:2]}")

    # --- Actions: each through its confirmation, then its audit event.
    def act(page, action, fields, selector_scope="", checks=None):
        driver.get(page)
        forms = css(f"{selector_scope} form.action[data-action='{action}']")
        if not check(bool(forms), f"{action}: its form is on the page"):
            return None
        form = forms[0]
        # Each action is folded under its name: open it as a keyboard or a pointer would.
        form.find_element(By.XPATH, "./ancestor::details[1]/summary").click()
        for name, value in fields.items():
            element = form.find_element(By.CSS_SELECTOR, f"[name='{name}']")
            if element.get_attribute("type") == "checkbox":
                if bool(value) != element.is_selected():
                    element.click()
            elif element.tag_name == "select":
                driver.execute_script("arguments[0].value = arguments[1]", element, value)
            else:
                element.clear()
                element.send_keys(value)
        invalid = driver.execute_script(
            "return Array.from(arguments[0].elements).filter(e => !e.checkValidity()).map(e => e.name)", form)
        check(invalid == [], f"{action}: the form is complete: {invalid}")
        form.find_element(By.CSS_SELECTOR, "button[type=submit], input[type=submit]").click()
        WebDriverWait(driver, 30).until(lambda d: one("#confirm-summary") is not None or one("#error") is not None)
        summary = text("#confirm-summary")
        if not check(bool(summary), f"{action}: a confirmation says what will happen: {summary!r}"):
            return None
        if action == "extend-renewal":
            shot("confirm")
        driver.find_element(By.ID, "confirm-button").click()
        # The answer is the page the confirmation redirects to, with the result or the error.
        WebDriverWait(driver, 60).until(lambda d: one("#result") is not None or one("#error") is not None)
        result, error = text("#result"), text("#error")
        check(result is not None and error is None, f"{action}: done: {result or error!r}")
        return result

    def operator_acted(event):
        """The event's actor is the operator's certificate (its names, the first its own)."""
        return (event.get("actor") or "").split(",")[0] == "operator"

    def audited(account, reason, what):
        # Each action's service records its audit event before it answers: read once.
        events = [e for e in history(account) if e.get("reason") == reason]
        check(any(operator_acted(e) for e in events), f"{what}: the audit trail names the operator and the reason")
        if not any(operator_acted(e) for e in events):
            print("     events:", [(e.get("kind"), e.get("storeSubtype"), e.get("actor"), e.get("reason"))
                                   for e in history(account)[:6]])
        # And on the account page: the history's row with the operator and the reason.
        driver.get(f"{base}/account/{urllib.parse.quote(account, safe='')}")
        rows = [row.text for row in css("#history tr.event")]
        check(any(reason in row and "operator" in row for row in rows),
              f"{what}: the account page's history shows the operator and the reason")
        return events

    google_row = "#subscriptions tr.subscription[data-key^='google/']"
    apple_row = "#subscriptions tr.subscription[data-key^='apple/']"
    steps = [
        ("refresh", {"reason": "customer says access is missing"}, apple_row),
        ("grant", {"capability": "premium", "days": "7", "reason": "goodwill after an outage"}, ""),
        ("extend-renewal", {"days": "7", "reason": "service outage compensation"}, apple_row),
        ("consumption", {"consented": True, "reason": "refund request under review"}, apple_row),
        ("refund-google-order", {"reason": "charged twice"}, google_row),
    ]
    for action, fields, scope in steps:
        act(account_url, action, fields, scope)
        audited(ALICE, fields["reason"], action)
    # Revoke the grant made above.
    act(account_url, "revoke-grant", {"reason": "goodwill period over"}, "#grants")
    audited(ALICE, "goodwill period over", "revoke-grant")

    # Work queues: the refused hostile notification, shown as text; replay of a failed entry.
    driver.get(f"{base}/queues")
    fits("the work queues")
    shot("queues")
    queue = text("#failed-notifications") or ""
    check(XSS_TYPE in queue and XSS_SUBTYPE in queue, "a notification type and subtype holding HTML are shown as text")
    no_script_ran("the work queues")
    stack.call("ledger", "RecordNotification", {"entry": {
        "store": "STORE_APPLE", "environment": "ENVIRONMENT_SANDBOX", "notificationId": "failed-notification-1",
        "notificationType": "DID_RENEW", "status": "INBOX_STATUS_PENDING", "rawPayload": "not a JWS",
        "key": {"store": "STORE_APPLE", "environment": "ENVIRONMENT_SANDBOX", "storeId": original}}})
    stack.call("ledger", "MarkInbox", {"store": "STORE_APPLE", "notificationId": "failed-notification-1",
                                      "status": "INBOX_STATUS_FAILED", "error": "left failed by the test"})
    driver.get(f"{base}/queues")
    failed_row = [row for row in css("#failed-notifications tr.inbox-entry") if "failed-notification-1" in row.text]
    check([[a.text for a in row.find_elements(By.CSS_SELECTOR, "a.account-link")] for row in failed_row] == [[ALICE]],
          "a failed notification's row links the account that holds its subscription")
    replayed = act(f"{base}/queues", "replay-inbox", {"reason": "store outage is over"}, "#failed-notifications")
    check((replayed or "").startswith("put back to pending for the verifier's next reconciliation pass: "),
          f"replay-inbox: the result says what happens next: {replayed!r}")
    audited(ALICE, "store outage is over", "replay-inbox")

    # Dead letters: the receiver refused everything for longer than the endpoint's max age.
    stack.sim("clock/advance", {"by": "+2d"})
    # The deliverer gives an event up when an attempt fails past the endpoint's age: look after
    # each attempt the receiver refuses (the last look, should no attempt follow, after 30 s).
    def dead_letters():
        return stack.call("ledger", "ListDeadLetters", {"limit": 10}).get("deadLetters", [])

    seen, dead, deadline = Receiver.attempts, dead_letters(), time.monotonic() + 180
    while not dead and time.monotonic() < deadline:
        seen = Receiver.next_attempt(seen, timeout=30)
        dead = dead_letters()
    check(len(dead) > 0, "events became dead letters")
    Receiver.accepting = True
    act(f"{base}/queues", "redeliver-webhook", {"reason": "endpoint fixed"}, "#dead-letters")
    with Receiver.arrived:
        Receiver.arrived.wait_for(lambda: Receiver.received, 120)
    check(len(Receiver.received) > 0, "the dead letter reached the receiver again")
    # The first row's dead letter is the one delivered again (alice's App Store purchase, logged
    # before her link): its subscription's trail says so, and so does alice's page.
    redelivered = dead[0]["attempt"]["event"]
    trail = stack.call("ledger", "GetHistory", {"key": redelivered["key"], "pageSize": 100}).get("events", [])
    check(any(e.get("reason") == "endpoint fixed" and e.get("storeSubtype") == "REDELIVER_WEBHOOK"
              and operator_acted(e) for e in trail),
          "redeliver-webhook: the subscription's audit trail names the operator and the reason")
    driver.get(account_url)
    check(any("endpoint fixed" in row.text and "operator" in row.text for row in css("#history tr.event")),
          "redeliver-webhook: the account page's history shows the operator and the reason")

    # Revoke last: it ends the Google subscription.
    act(account_url, "revoke-google", {"reason": "fraud confirmed"}, google_row)
    audited(ALICE, "fraud confirmed", "revoke-google")
    driver.get(account_url)
    fits("the account page after every action")
    timing = driver.execute_script(
        "const n = performance.getEntriesByType('navigation')[0]; return [n.responseStart - n.requestStart, n.duration]")
    print(f"the account page after every action: first byte after {timing[0]:.0f} ms, loaded in {timing[1]:.0f} ms")
    shot("account-after-actions")
    shot("account-readme", height=1250)  # docs/images/console-account.png is this one

    # A purchase no account holds (bought, never verified): found by its token, restored to the
    # customer's account, and so acknowledged at Google.
    orphan = stack.sim("google/buy", {"productId": "pro_sub"})["purchaseToken"]
    stack.watch_changes(lambda change: change.get("subscription", {}).get("key", {}).get("storeId") == orphan)
    check(True, "the unverified purchase reaches the ledger from Play's notification")
    act(f"{base}/find?q={urllib.parse.quote(orphan)}", "restore", {"account": "carol", "reason": "bought, app crashed"},
        "#results")
    check(urllib.parse.urlparse(driver.current_url).path == "/account/carol",
          f"restore: the outcome is shown on carol's page: {driver.current_url}")
    owned = stack.call("ledger", "GetAccount", {"accountId": "carol"}).get("subscriptions", [])
    check([(o["key"]["storeId"], o.get("acknowledged", False)) for o in owned] == [(orphan, True)],
          "the restored purchase is carol's and acknowledged")
    # Recorded under the purchase (the restore's read is made before the link).
    restore_events = [e for e in stack.call("ledger", "GetHistory", {
        "key": {"store": "STORE_GOOGLE", "environment": "ENVIRONMENT_PRODUCTION", "storeId": orphan},
        "pageSize": 100}).get("events", []) if e.get("reason") == "bought, app crashed"]
    check([(e.get("kind"), operator_acted(e)) for e in restore_events] == [("EVENT_KIND_IMPORTED", True)],
          f"restore: the purchase's audit trail names the operator and the reason: {restore_events}")
    driver.get(f"{base}/account/carol")
    check(any("bought, app crashed" in row.text for row in css("#history tr.event")),
          "restore: carol's page shows the restore in her history (read from the purchase's own history)")

    # The hostile account's page: everything shown as text.
    driver.get(f"{base}/account/{urllib.parse.quote(XSS_ACCOUNT, safe='')}")
    check(text("main h1") == XSS_ACCOUNT, "an account id holding script is the page's title, as text")
    check(XSS_PRODUCT in [c.text for c in css("#subscriptions td.product")], "a product id holding HTML is shown as text")
    no_script_ran("the hostile account's page")
    shot("hostile")

    # --- A cross-site form post is refused and changes nothing.
    Attacker.target = base
    attacker = serve(Attacker)
    grants_before = [e for e in history(ALICE) if e.get("reason") == "cross-site grant"]
    driver.get(f"http://127.0.0.1:{attacker.server_port}/")
    WebDriverWait(driver, 30).until(lambda d: d.current_url.startswith(base))
    body = driver.find_element(By.TAG_NAME, "body").text.lower()
    check("cross-site request refused" in body, f"the cross-site post is refused: {body[:80]!r}")
    check(grants_before == [] and [e for e in history(ALICE) if e.get("reason") == "cross-site grant"] == [],
          "the cross-site post granted nothing")

    # --- The read-only role.
    support_url = stack.console("support")
    support = support_url.split("/login", 1)[0]
    driver.get(support_url)
    check(text("#whoami") == "support · read-only", f"the read-only console says so: {text('#whoami')}")
    driver.get(f"{support}/find?q={original}")
    check("original transaction" in (text("#taken-as") or "").lower(), "read-only finds by a whole original transaction id")
    driver.get(f"{support}/account/{ALICE}")
    keys = [cell.text for cell in css("#subscriptions td.key")]
    check(keys and all(k.startswith("…") and len(k) <= 5 for k in keys if k),
          f"read-only sees store ids masked to their last characters: {keys}")
    check(original not in driver.page_source and token not in driver.page_source,
          "no whole store id anywhere in the read-only page")
    check(css("form.action") == [] and css("a.payload") == [], "read-only has no actions and no payload links")
    shot("account-read-only")
    refused = driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        fetch('/action/grant', {method: 'POST', headers: {'Content-Type': 'application/x-www-form-urlencoded'},
          body: 'account=alice&capability=pro&reason=read-only+try&confirm=yes'}).then(r => done(r.status));""")
    check(refused == 403, f"a read-only action post is refused: {refused}")
    answer = stack.call("ledger", "GrantEntitlement", {"idempotencyKey": "support-try", "accountId": ALICE,
                                                         "capability": "pro", "reason": "read-only try"},
                        identity="support", check=False)
    check("error" in answer and "read-only" in answer["error"], f"the ledger refuses support a grant: {answer}")
finally:
    if driver:
        driver.quit()
    stack.stop()

print(f"screenshots in {SHOTS}")
if failures:
    print(f"{len(failures)} checks failed")
    sys.exit(1)
print("every check held")
