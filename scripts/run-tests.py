#!/usr/bin/env python3
"""Runs the XCTest bundle's test classes in parallel processes and reports per-test durations.

    scripts/run-tests.py --build-path .build/debug              every class, TEST_JOBS (3) at once
    scripts/run-tests.py --build-path .build-tsan/debug --sanitizer thread
    scripts/run-tests.py --build-path .build/debug --filter 'Stub|Fleet'

Why processes per class: the suite spends most of its time waiting (loopback servers, child
daemons, deadlines), with the machine's two cores mostly idle; the test classes are independent
(port 0, namespaces and temporary files named by process id), so several run at once. A class
runs whole in one process, as `swift test` runs it, so class-level set-up is unchanged.

Which classes run: every class the bundle lists (`--list-tests`), or those matching `--filter`
(a regular expression over `Module.Class`). With `--sanitizer`, the classes that Tests/sanitizer-
classes.txt records as running single-threaded value code only (no thread, task, process or
socket of their own, measured by `--classify`) are left to the plain leg, which runs every class;
a class that list does not name runs under the sanitizer too (new classes are kept by default).
See CONTRIBUTING.md, "What the sanitizer legs run".

Every listed test must be reported as passed: a class whose process crashes, hangs past its
deadline, or reports fewer tests than it holds fails the run. At the end the 20 slowest tests and
the 10 slowest classes are printed, and every duration is written to BUILD/test-durations.tsv,
which the next run uses to start the longest classes first.
"""
import argparse
import collections
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SANITIZER_LIST = os.path.join(ROOT, "Tests", "sanitizer-classes.txt")
# Classes that hold one fixed resource run one at a time: the demo's stub scene listens on
# 127.0.0.6:53 (the address a resolv.conf can name; port 53 cannot be chosen), so two demos at once
# would find it taken.
EXCLUSIVE = [{"HTTPDNSToolTests.DemoCommandTests", "HTTPDNSToolTests.DemoStubSceneTests"}]
# Classes that measure the machine run alone, first: a p99 compared against a steady run, or a
# signal that must land while a load is still running, lost to four sanitized classes at once
# (FleetRollingRestartTests and ProxyDrainTests failed so under ThreadSanitizer with 4 jobs); a
# fleet's decision promised on every instance within a second over Redis (HTTPDNSRedisSharingTests
# once saw an instance not merge the fleet's reports within its 10 s with three classes beside it).
# FailureReportLoopTests: an app must time its blocked address out and send the report before
# it exits, which a loaded machine delayed past its exit once.
SOLO = {
    "HTTPDNSAcceptanceTests.FailureReportLoopTests",
    "HTTPDNSServerTests.HTTPDNSRedisSharingTests",
    "HTTPDNSToolTests.FleetRollingRestartTests",
    "HTTPDNSToolTests.ProxyDrainTests",
    "HTTPDNSToolTests.ServeDrainTests",
    "HTTPDNSToolTests.StubUpstreamTests",
}
CASE = re.compile(r"^Test Case '([\w.]+)\.(\w+)' (passed|failed|skipped) \(([\d.]+) seconds\)")


def list_tests(binary):
    out = subprocess.run([binary, "--list-tests"], check=True, capture_output=True, text=True).stdout
    classes = collections.OrderedDict()
    for line in out.splitlines():
        line = line.strip()
        if "/" not in line or " " in line:
            continue
        cls, test = line.split("/", 1)
        classes.setdefault(cls, []).append(test)
    if not classes:
        sys.exit(f"run-tests: {binary} lists no tests")
    return classes


def read_value_only_classes():
    """The classes Tests/sanitizer-classes.txt marks `value-only` (class name, tab, verdict, reason)."""
    value_only = set()
    with open(SANITIZER_LIST) as file:
        for line in file:
            if line.startswith("#") or not line.strip():
                continue
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= 2 and fields[1] == "value-only":
                value_only.add(fields[0])
    return value_only


def read_durations(path):
    durations = {}
    for candidate in (path, os.path.join(ROOT, "Tests", "test-durations.tsv")):
        if candidate and os.path.exists(candidate):
            with open(candidate) as file:
                for line in file:
                    fields = line.split("\t")
                    if len(fields) == 2 and not line.startswith("#"):
                        durations.setdefault(fields[0], float(fields[1]))
    return durations


class Runner:
    def __init__(self, args, binary, classes):
        self.args = args
        self.binary = binary
        self.classes = classes
        self.lock = threading.Lock()
        self.results = {}  # class -> (ok, seconds, passed tests, log text, reason)
        self.tests = []  # (seconds, "Class.test")
        self.done = 0
        self.log_dir = tempfile.mkdtemp(prefix="httpdns-tests-")

    def environment(self, cls):
        env = dict(os.environ)
        if self.args.sanitizer == "thread":
            env.setdefault("TSAN_OPTIONS", "halt_on_error=1")
        if self.args.sanitizer == "address":
            env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
        if self.args.classify:
            env["LD_PRELOAD"] = self.args.classify_shim
            env["HTTPDNS_CONCURRENCY_LOG"] = os.path.join(self.log_dir, cls + ".concurrency")
        return env

    def run_class(self, cls):
        expected = len(self.classes[cls])
        log_path = os.path.join(self.log_dir, cls + ".log")
        started = time.monotonic()
        reason = None
        with open(log_path, "w") as log:
            process = subprocess.Popen([self.binary, cls], stdout=log, stderr=subprocess.STDOUT,
                                       env=self.environment(cls), cwd=ROOT, start_new_session=True)
            try:
                status = process.wait(timeout=self.args.class_timeout)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                status = None
                reason = f"no result within {self.args.class_timeout} s (killed)"
        seconds = time.monotonic() - started
        with open(log_path, errors="replace") as file:
            text = file.read()
        passed, failed, cases = 0, 0, []
        for line in text.splitlines():
            match = CASE.match(line)
            if match:
                if match[3] == "passed":
                    passed += 1
                elif match[3] == "failed":
                    failed += 1
                cases.append((float(match[4]), f"{match[1]}.{match[2]}"))
        if reason is None and status != 0:
            reason = f"exit status {status}" + (" (a signal)" if status < 0 else "")
        if reason is None and passed != expected:
            reason = f"{passed} of {expected} tests reported passed"
        ok = reason is None and failed == 0
        # Nested processes the class left behind (a daemon whose test crashed) go with it.
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        with self.lock:
            self.results[cls] = (ok, seconds, passed, text, reason)
            self.tests.extend(cases)
            self.done += 1
            mark = "ok  " if ok else "FAIL"
            print(f"[{self.done:3d}/{len(self.classes)}] {mark} {cls} ({passed}/{expected} tests, {seconds:.1f} s)"
                  + (f": {reason}" if reason else ""), flush=True)
            if not ok:
                print(f"---- {cls} output ----\n{text[-20000:]}\n---- end of {cls} ----", flush=True)

    def run(self, order):
        queue = list(order)
        running = set()
        ready = threading.Condition(self.lock)

        def blocked(cls):
            if running & SOLO or (cls in SOLO and running):
                return True
            return any(cls in group and running & group for group in EXCLUSIVE)

        def worker():
            while True:
                with ready:
                    while True:
                        if not queue:
                            return
                        cls = next((c for c in queue if not blocked(c)), None)
                        if cls is not None:
                            break
                        ready.wait()
                    queue.remove(cls)
                    running.add(cls)
                try:
                    self.run_class(cls)
                finally:
                    with ready:
                        running.discard(cls)
                        ready.notify_all()
        threads = [threading.Thread(target=worker) for _ in range(self.args.jobs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-path", default=".build/debug", help="where swift-httpdnsPackageTests.xctest is")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("TEST_JOBS", "3")))
    parser.add_argument("--filter", help="a regular expression over Module.Class")
    parser.add_argument("--sanitizer", choices=["thread", "address"])
    parser.add_argument("--class-timeout", type=int, default=int(os.environ.get("TEST_CLASS_TIMEOUT", "900")))
    parser.add_argument("--label", default="tests")
    parser.add_argument("--classify", action="store_true",
                        help="run every class once under a shim that counts threads, processes and sockets "
                             "and rewrite Tests/sanitizer-classes.txt from what it saw")
    args = parser.parse_args()
    binary = os.path.join(args.build_path, "swift-httpdnsPackageTests.xctest")
    if not os.path.exists(binary):
        sys.exit(f"run-tests: {binary} is not built (swift build --build-tests)")
    classes = list_tests(binary)
    if args.filter:
        pattern = re.compile(args.filter)
        classes = collections.OrderedDict((c, t) for c, t in classes.items() if pattern.search(c))
    left_out = []
    if args.sanitizer and not args.classify:
        value_only = read_value_only_classes()
        left_out = [c for c in classes if c in value_only]
        classes = collections.OrderedDict((c, t) for c, t in classes.items() if c not in value_only)
    if args.classify:
        args.classify_shim = build_classify_shim()
    if not classes:
        sys.exit("run-tests: no test class selected")

    durations_path = os.path.join(args.build_path, "test-durations.tsv")
    known = read_durations(durations_path)
    # Longest first (unknown classes count as long: they may be), so that the last to finish is short.
    order = sorted(classes, key=lambda c: (c not in SOLO, -known.get(c, 30.0)))
    count = sum(len(t) for t in classes.values())
    load = os.getloadavg()
    print(f"run-tests ({args.label}): {count} tests in {len(classes)} classes, {args.jobs} at once"
          + (f"; {len(left_out)} value-only classes left to the plain leg" if left_out else "")
          + f"; load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    started = time.monotonic()
    runner = Runner(args, binary, classes)
    runner.run(order)
    wall = time.monotonic() - started

    with open(durations_path, "w") as file:
        file.write("# class\tseconds (scripts/run-tests.py, last run)\n")
        for cls, (_, seconds, _, _, _) in sorted(runner.results.items(), key=lambda item: -item[1][1]):
            file.write(f"{cls}\t{seconds:.2f}\n")
    if args.classify:
        write_classification(runner)

    print(f"\n{args.label}: the 20 slowest tests")
    for seconds, name in sorted(runner.tests, reverse=True)[:20]:
        print(f"  {seconds:8.2f} s  {name}")
    print(f"{args.label}: the 10 slowest classes")
    for cls, (_, seconds, _, _, _) in sorted(runner.results.items(), key=lambda item: -item[1][1])[:10]:
        print(f"  {seconds:8.2f} s  {cls}")
    failed = sorted(c for c, r in runner.results.items() if not r[0])
    passed = sum(r[2] for r in runner.results.values())
    total_class_time = sum(r[1] for r in runner.results.values())
    print(f"{args.label}: {passed} of {count} tests passed in {wall:.0f} s "
          f"({total_class_time:.0f} s of class time, {args.jobs} at once)", flush=True)
    if failed:
        # Last, so that a log showing only its end still says why (the class's whole output was
        # printed when it failed, further up).
        for cls in failed:
            _, _, passed_here, text, reason = runner.results[cls]
            print(f"{args.label}: {cls} failed: {reason or 'a test failed'} "
                  f"({passed_here} of {len(classes[cls])} tests passed)")
            for line in failure_digest(text):
                print(f"  | {line}")
        print(f"{args.label}: FAILED classes: {' '.join(failed)}", flush=True)
        sys.exit(1)


NOTEWORTHY = re.compile(r"error|fatal|crash|signal|failed|precondition|assert|abort|sanitizer|💣", re.IGNORECASE)


def failure_digest(text, limit=16):
    """The lines of a failed class's output that say what went wrong: its failures and errors, and
    for a crash the backtracer's `Thread N crashed:` line with its first frames; else its last lines."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    picked = [line for line in lines if NOTEWORTHY.search(line)
              and not re.match(r"^Test (Case|Suite) .* (passed|started)|^\s*\d+ |^0x", line)]
    crash = next((i for i, line in enumerate(lines) if re.match(r"^Thread \d+ .*crashed:", line)), None)
    if crash is not None:
        frames = lines[crash + 1:crash + 7]
        at = picked.index(lines[crash]) + 1 if lines[crash] in picked else len(picked)
        picked[at:at] = frames
    if not picked:
        picked = lines[-limit:]
    return [line[:300] for line in picked[:limit]]


SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
static int threads, spawns, sockets;
int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *p) {
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    if (!real) real = dlsym(RTLD_NEXT, "pthread_create");
    __atomic_add_fetch(&threads, 1, __ATOMIC_RELAXED);
    return real(t, a, f, p);
}
int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    static int (*real)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                       char *const[], char *const[]);
    if (!real) real = dlsym(RTLD_NEXT, "posix_spawn");
    __atomic_add_fetch(&spawns, 1, __ATOMIC_RELAXED);
    return real(pid, path, fa, attr, argv, envp);
}
int posix_spawnp(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                 const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    static int (*real)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                       char *const[], char *const[]);
    if (!real) real = dlsym(RTLD_NEXT, "posix_spawnp");
    __atomic_add_fetch(&spawns, 1, __ATOMIC_RELAXED);
    return real(pid, path, fa, attr, argv, envp);
}
pid_t fork(void) {
    static pid_t (*real)(void);
    if (!real) real = dlsym(RTLD_NEXT, "fork");
    __atomic_add_fetch(&spawns, 1, __ATOMIC_RELAXED);
    return real();
}
int socket(int domain, int type, int protocol) {
    static int (*real)(int, int, int);
    if (!real) real = dlsym(RTLD_NEXT, "socket");
    __atomic_add_fetch(&sockets, 1, __ATOMIC_RELAXED);
    return real(domain, type, protocol);
}
static pid_t owner;
__attribute__((constructor)) static void start(void) { owner = getpid(); }
__attribute__((destructor)) static void report(void) {
    const char *path = getenv("HTTPDNS_CONCURRENCY_LOG");
    if (!path || getpid() != owner) return;
    FILE *file = fopen(path, "w");
    if (!file) return;
    fprintf(file, "threads=%d spawns=%d sockets=%d\n", threads, spawns, sockets);
    fclose(file);
}
"""


def build_classify_shim():
    directory = tempfile.mkdtemp(prefix="httpdns-classify-")
    source = os.path.join(directory, "shim.c")
    library = os.path.join(directory, "libconcurrency.so")
    with open(source, "w") as file:
        file.write(SHIM)
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", library, source, "-ldl"], check=True)
    return library


# XCTest itself starts 3 or 4 threads to run any test (its async runner on the cooperative pool):
# a class that runs no test of its own shows as many.
XCTEST_THREADS = 4
CONCURRENT_WORDS = re.compile(r"\b(async|await|Task|Thread|Dispatch\w*|DispatchQueue|HTTPDNSLock|Mutex|Atomic|"
                              r"withTaskGroup|concurrentPerform|pthread_\w+)\b")


def class_source(cls):
    """The text of the files under Tests/<Module>/ that declare or extend the class."""
    module, name = cls.split(".", 1)
    directory = os.path.join(ROOT, "Tests", module)
    declaration = re.compile(r"\b(class|extension)\s+" + re.escape(name) + r"\b")
    texts = []
    for file_name in sorted(os.listdir(directory)):
        if file_name.endswith(".swift"):
            with open(os.path.join(directory, file_name)) as file:
                text = file.read()
            if declaration.search(text):
                texts.append(text)
    return "\n".join(texts)


def write_classification(runner):
    lines = []
    for cls in sorted(runner.results):
        path = os.path.join(runner.log_dir, cls + ".concurrency")
        counts = {}
        if os.path.exists(path):
            with open(path) as file:
                for field in file.read().split():
                    key, value = field.split("=")
                    counts[key] = int(value)
        source = class_source(cls)
        words = sorted(set(match[1] for match in CONCURRENT_WORDS.finditer(source)))
        if not counts:
            verdict, reason = "concurrent", "no report from the shim (kept)"
        elif not source:
            verdict, reason = "concurrent", "source not found (kept)"
        elif counts.get("spawns") or counts.get("sockets") or counts.get("threads", 0) > XCTEST_THREADS:
            verdict = "concurrent"
            reason = ", ".join(f"{value} {key}" for key, value in counts.items() if value)
        elif words:
            verdict, reason = "concurrent", "its source uses " + ", ".join(words)
        else:
            verdict, reason = "value-only", f"{counts.get('threads', 0)} threads (XCTest's own), no process, no socket"
        lines.append(f"{cls}\t{verdict}\t{reason}\n")
    with open(SANITIZER_LIST, "w") as file:
        file.write("# Written by `scripts/run-tests.py --classify` from one run of every class under a shim that\n"
                   "# counts the threads it starts (pthread_create), the processes it spawns and the sockets it\n"
                   f"# opens, and from its source. `value-only`: no process, no socket, no more threads than XCTest's\n"
                   f"# own runner starts ({XCTEST_THREADS}), and no async, Task, Thread, Dispatch, lock or atomic in its\n"
                   "# source. The sanitizer legs leave those to the plain leg (CONTRIBUTING.md). Columns: class,\n"
                   "# verdict, reason.\n")
        file.writelines(lines)


if __name__ == "__main__":
    main()
