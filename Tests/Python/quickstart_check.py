"""Runs docs/quickstart.md as written against the sandbox (scripts/run-local --sandbox).

Usage: quickstart_check.py ROOT BIN_DIR WORK_DIR

- starts the sandbox and waits for its "sandbox running" line;
- saves the page's `# receiver.py` block and runs it;
- runs every ```sh block in one bash, in page order (variables carry over), and compares what
  each prints with the ```text block right after it, exactly;
- checks that the receiver printed every line of the block after `<!-- receiver output -->`
  (in any order, others beside them, a line at least as often as the block has it), and
  refused nothing;
- starts a new sandbox and runs the `# quickstart.py` block, comparing its output with the
  ```text block after it.
Exit status 0 when everything matches; otherwise each difference is printed.
"""

import os
import re
import signal
import subprocess
import sys
import threading
import time

ROOT, BIN_DIR, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
PAGE = open(os.path.join(ROOT, "docs", "quickstart.md"), encoding="utf-8").read()
FENCE = re.compile(r"(<!-- receiver output -->\n)?```(\w*)\n(.*?)\n```", re.S)
blocks = [(m.group(2), m.group(3), m.group(1) is not None) for m in FENCE.finditer(PAGE)]
failures = []


def default_signals():
    """Children take Ctrl-C and TERM as a terminal gives them, whatever this process inherited
    (a test runner may ignore them, and ignored signals pass through exec)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def block_after(index, language="text"):
    if index + 1 < len(blocks) and blocks[index + 1][0] == language:
        return blocks[index + 1][1]
    return None


def python_block(name):
    for index, (language, text, _) in enumerate(blocks):
        if language == "python" and text.startswith(f"# {name}"):
            return index, text
    raise SystemExit(f"docs/quickstart.md has no python block starting with '# {name}'")


def start_sandbox():
    log = open(os.path.join(WORK, "sandbox.out"), "w")
    process = subprocess.Popen(
        [os.path.join(ROOT, "scripts", "run-local"), "--sandbox"],
        cwd=ROOT, env={**os.environ, "BIN_DIR": BIN_DIR}, stdout=subprocess.PIPE, stderr=log,
        text=True, start_new_session=True, preexec_fn=default_signals)
    seen = []
    deadline = time.monotonic() + 120
    for line in process.stdout:
        seen.append(line)
        if line.startswith("sandbox running"):
            break
        if time.monotonic() > deadline:
            break
    else:
        raise SystemExit("the sandbox did not start:\n" + "".join(seen))
    return process


def stop(process, name):
    try:
        os.killpg(process.pid, signal.SIGINT)
    except ProcessLookupError:
        return
    try:
        process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
    # The next start empties .run/sandbox: its logs are kept beside the check's files.
    logs = os.path.join(ROOT, ".run", "sandbox")
    kept = os.path.join(WORK, name)
    os.makedirs(kept, exist_ok=True)
    for entry in os.listdir(logs) if os.path.isdir(logs) else []:
        if entry.endswith(".log"):
            with open(os.path.join(logs, entry), "rb") as source, open(os.path.join(kept, entry), "wb") as copy:
                copy.write(source.read())


os.makedirs(WORK, exist_ok=True)
_, receiver_code = python_block("receiver.py")
with open(os.path.join(WORK, "receiver.py"), "w") as file:
    file.write(receiver_code + "\n")
receiver = subprocess.Popen(
    [sys.executable, "receiver.py"], cwd=WORK, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    preexec_fn=default_signals)
# The receiver's lines as they come (also kept in receiver.out); `arrived` wakes a waiter.
received = []
arrived = threading.Condition()


def read_receiver():
    with open(os.path.join(WORK, "receiver.out"), "w") as copy:
        for line in receiver.stdout:
            copy.write(line)
            copy.flush()
            with arrived:
                received.append(line.rstrip())
                arrived.notify_all()


threading.Thread(target=read_receiver, daemon=True).start()

sandbox = start_sandbox()
try:
    # The sh blocks in one bash, a marker after each, so that each block's output stands apart.
    script = ["set -e"]
    checks = []
    for index, (language, text, _) in enumerate(blocks):
        if language != "sh":
            continue
        script.append(text)
        script.append(f"echo '@@block {len(checks)}@@'")
        checks.append((text, block_after(index)))
    run = subprocess.run(
        ["bash", "-c", "\n".join(script)], cwd=WORK, capture_output=True, text=True, timeout=300,
        preexec_fn=default_signals)
    outputs = re.split(r"^@@block \d+@@\n", run.stdout, flags=re.M)
    if run.returncode != 0:
        failures.append(f"the sh blocks stopped with status {run.returncode}: {run.stderr}")
    for number, (command, expected) in enumerate(checks):
        printed = outputs[number].strip("\n") if number < len(outputs) else "(did not run)"
        if expected is not None and printed != expected:
            failures.append(f"block {number}:\n{command}\nprinted:\n{printed}\nthe page says:\n{expected}")

    # The receiver: every documented line, within 30 s.
    expected_lines = next(text for _, text, marked in blocks if marked).splitlines()

    wanted = {line: expected_lines.count(line) for line in expected_lines}

    def missing(received):
        return {line: count for line, count in wanted.items() if received.count(line) < count}

    # Woken by each line the receiver prints, for at most 30 s.
    with arrived:
        arrived.wait_for(lambda: not missing(received), timeout=30)
    if missing(received):
        failures.append("the receiver printed:\n" + "\n".join(received) + "\nthe page says:\n" + "\n".join(expected_lines))
    if any(line.startswith("refused") for line in received):
        failures.append("the receiver refused a delivery:\n" + "\n".join(received))
finally:
    stop(sandbox, "curl")

sandbox = start_sandbox()
try:
    index, code = python_block("quickstart.py")
    with open(os.path.join(WORK, "quickstart.py"), "w") as file:
        file.write(code + "\n")
    run = subprocess.run([sys.executable, "quickstart.py"], cwd=WORK, capture_output=True, text=True, timeout=120)
    expected = block_after(index)
    if run.returncode != 0 or run.stdout.strip("\n") != expected:
        failures.append(f"quickstart.py (status {run.returncode}) printed:\n{run.stdout}{run.stderr}\nthe page says:\n{expected}")
finally:
    stop(sandbox, "python")
    receiver.kill()
    receiver.wait()

if failures:
    print("\n\n".join(failures))
    sys.exit(1)
print(f"docs/quickstart.md: {len(checks)} sh blocks, the receiver and quickstart.py as the page says")
