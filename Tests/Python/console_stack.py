"""A store simulator stack on loopback with mutual TLS, for the support console's browser test.

`storesim`, `ledger`, `entitlement` and `verifier` as processes on free ports, each with its own
certificate from a CA made here with openssl; `operator` and `support` certificates for the two
consoles, `support` in every service's `RPC_READ_ONLY`. Calls are made with `subctl call` under
the operator's certificate, as an operator would.
"""

import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.request

START_MS = 1767225600000  # 2026-01-01T00:00:00Z, the simulator's clock at start
NAMES = ["ledger", "verifier", "entitlement", "operator", "support"]


def default_signals():
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def make_pki(folder):
    """ca.pem and NAME.pem / NAME.key for each of NAMES: P-256, SANs NAME, localhost, 127.0.0.1."""
    os.makedirs(folder, exist_ok=True)

    def run(*args):
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    run("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key")
    run("req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=console test CA", "-days", "30",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
        "-out", "ca.pem")
    for name in NAMES:
        run("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", f"{name}.ec")
        run("pkcs8", "-topk8", "-nocrypt", "-in", f"{name}.ec", "-out", f"{name}.key")
        run("req", "-new", "-key", f"{name}.key", "-subj", f"/CN={name}", "-out", f"{name}.csr")
        with open(os.path.join(folder, f"{name}.ext"), "w") as ext:
            ext.write(f"subjectAltName=DNS:{name},DNS:localhost,IP:127.0.0.1\n"
                      "extendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "30", "-extfile", f"{name}.ext", "-out", f"{name}.pem")
        os.chmod(os.path.join(folder, f"{name}.key"), 0o600)


class Process:
    """A child whose stderr lines are kept, so a log line can be waited for."""

    def __init__(self, name, argv, env, cwd, stdout=False):
        self.name = name
        self.lines = []
        self.out = []
        self.cond = threading.Condition()
        self.log = open(os.path.join(cwd, f"{name}.log"), "w")
        self.proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=subprocess.PIPE if stdout else subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=default_signals)
        threading.Thread(target=self._read, args=(self.proc.stderr, self.lines), daemon=True).start()
        if stdout:
            threading.Thread(target=self._read, args=(self.proc.stdout, self.out), daemon=True).start()

    def _read(self, stream, into):
        for line in stream:
            self.log.write(line)
            self.log.flush()
            with self.cond:
                into.append(line.rstrip("\n"))
                self.cond.notify_all()

    def wait_line(self, pattern, stdout=False, timeout=60):
        """The first line (of stderr, or stdout) matching `pattern`; fails after `timeout` s."""
        regex = re.compile(pattern)
        lines = self.out if stdout else self.lines
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for line in lines:
                    if regex.search(line):
                        return line
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise SystemExit(f"{self.name} never printed /{pattern}/; see {self.log.name}")
                self.cond.wait(left)

    def field(self, pattern, key):
        return json.loads(self.wait_line(pattern))[key]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class Stack:
    def __init__(self, bin_dir, work, policy, storesim_env=None, entitlement_env=None):
        self.bin = bin_dir
        self.work = work
        self.pki = os.path.join(work, "pki")
        self.processes = []
        make_pki(self.pki)
        base = {k: v for k, v in os.environ.items() if not k.startswith(("RPC_", "HTTP_", "TLS_", "LEDGER_"))}
        sim = dict(base, STORESIM_DIR=os.path.join(work, "storesim"), STORESIM_START=str(START_MS),
                   **(storesim_env or {}))
        self.storesim = self.start("storesim", sim)
        ready = json.loads(self.storesim.wait_line(r'"msg":"storesim ready"'))
        self.control = f"http://127.0.0.1:{ready['control_port']}/control"
        clock = os.path.join(work, "storesim", "clock")
        with open(os.path.join(work, "policy.conf"), "w") as f:
            f.write(policy)

        def service(name, extra):
            env = dict(base, RPC_LISTEN="127.0.0.1:0", HTTP_LISTEN="127.0.0.1:0", OPS_LISTEN="off",
                       TLS_CERT=f"{self.pki}/{name}.pem", TLS_KEY=f"{self.pki}/{name}.key",
                       TLS_CA=f"{self.pki}/ca.pem", RPC_READ_ONLY="support", HTTP_TLS="off",
                       CLOCK_FILE=clock, **extra)
            process = self.start(name, env)
            address = process.field(r'"msg":"rpc server listening"', "address")
            http = process.field(r'"msg":"http server listening"', "port")
            return process, address, http

        _, self.ledger, _ = service("ledger", {"LEDGER_SQLITE_PATH": os.path.join(work, "ledger.sqlite")})
        _, self.entitlement, _ = service("entitlement", {
            "LEDGER_ADDR": self.ledger, "ENTITLEMENT_POLICY_FILE": os.path.join(work, "policy.conf"),
            **(entitlement_env or {})})
        verifier_env = {"LEDGER_ADDR": self.ledger}
        with open(os.path.join(work, "storesim", "verifier.env")) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#") and "=" in line:
                    key, value = line.split("=", 1)
                    verifier_env[key] = value.strip("'\"")
        _, self.verifier, verifier_http = service("verifier", verifier_env)
        self.sim("apple/notification-url",
                 {"url": f"http://127.0.0.1:{verifier_http}/apple/notifications/sandbox"})
        self.sim("google/notification-url", {"url": f"http://127.0.0.1:{verifier_http}/google/rtdn"})

    def start(self, name, env, argv=None, stdout=False):
        process = Process(name, argv or [os.path.join(self.bin, name)], env, self.work, stdout=stdout)
        self.processes.append(process)
        return process

    def tls_flags(self, identity):
        return ["--tls-cert", f"{self.pki}/{identity}.pem", "--tls-key", f"{self.pki}/{identity}.key",
                "--tls-ca", f"{self.pki}/ca.pem"]

    def sim(self, path, body=None):
        """A call to the simulator's control surface; its JSON answer."""
        request = urllib.request.Request(f"{self.control}/{path}", data=json.dumps(body or {}).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            text = answer.read().decode()
            return json.loads(text) if text else {}

    def call(self, service, method, request, identity="operator", check=True):
        """`subctl call` under `identity`'s certificate; the answer as JSON (or the failure)."""
        address = {"ledger": self.ledger, "verifier": self.verifier, "entitlement": self.entitlement}[service]
        result = subprocess.run(
            [os.path.join(self.bin, "subctl"), "call", method, json.dumps(request), "--addr", address, "--json",
             *self.tls_flags(identity)], capture_output=True, text=True, timeout=60)
        if check and result.returncode != 0:
            raise SystemExit(f"subctl call {method} failed: {result.stdout}{result.stderr}")
        if result.returncode != 0:
            return {"error": (result.stdout + result.stderr).strip()}
        return json.loads(result.stdout) if result.stdout.strip() else {}

    def watch_changes(self, matches, timeout=120):
        """The first change of the ledger's feed (`Ledger/WatchChanges` from the beginning, a
        server stream that sends each commit as it happens) for which `matches` holds; fails
        after `timeout` s. Nothing is polled: the stream is read as the ledger writes it."""
        stream = subprocess.Popen(
            [os.path.join(self.bin, "subctl"), "call", "Ledger/WatchChanges", '{"after": "0"}', "--addr", self.ledger,
             "--json", "--timeout", f"{timeout}s", *self.tls_flags("operator")],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            for line in stream.stdout:
                change = json.loads(line)
                if matches(change):
                    return change
            raise SystemExit(f"the ledger's change feed ended in {timeout} s without the change waited for")
        finally:
            stream.kill()
            stream.wait()

    def console(self, identity, name=None):
        """`subctl console` under `identity`; its login address."""
        process = self.start(
            name or f"console-{identity}", dict(os.environ),
            [os.path.join(self.bin, "subctl"), "console", "--listen", "127.0.0.1:0", "--ledger", self.ledger,
             "--verifier", self.verifier, "--entitlement", self.entitlement,
             "--apple-root", os.path.join(self.work, "storesim", "apple-root.pem"), *self.tls_flags(identity)],
            stdout=True)
        line = process.wait_line(r"^console ready at ", stdout=True)
        return line.split(" at ", 1)[1].strip()

    def stop(self):
        for process in reversed(self.processes):
            process.stop()
