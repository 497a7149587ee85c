"""What the serve benchmarks share: starting `onnxllm serve` on a free port."""

import subprocess
import sys
import threading


def start_server(cli, model, *options):
    """Starts `cli serve -m model --port 0 options...`; returns (process, port) once it listens.
    Lines it prints before (e.g. a context limited by --kv-memory) go on to stderr; its stderr is then
    drained so that the server never blocks on a full pipe."""
    proc = subprocess.Popen([cli, "serve", "-m", model, "--port", "0", *map(str, options)],
                            stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if "listening on http://127.0.0.1:" in line:
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return proc, int(line.split("127.0.0.1:")[1].split()[0])
        print(line, end="", file=sys.stderr)
    raise SystemExit(f"the server did not start (exit status {proc.wait()})")
