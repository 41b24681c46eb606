"""A real HTTP server for the tests of remote shards: Debian's nginx-light, started on a free
port with its own config, root and logs, stopped (or killed, as a crashed server) by the test."""
import os
import subprocess
import sys
import time

from engine_lib import free_port, tmpdir, write

NGINX = "/usr/sbin/nginx"


class Nginx:
    """nginx serving `root` on 127.0.0.1:port, its files in `home`."""

    def __init__(self, home, root, server_extra=""):
        self.home, self.port, self.process = home, free_port(), None
        os.makedirs(os.path.join(home, "tmp"), exist_ok=True)
        self.log = os.path.join(home, "access.log")
        write(os.path.join(home, "nginx.conf"), f"""
daemon off;
master_process off;
worker_processes 1;
pid {home}/nginx.pid;
error_log {home}/error.log;
events {{ worker_connections 64; }}
http {{
  access_log {self.log};
  client_body_temp_path {home}/tmp;
  proxy_temp_path {home}/tmp;
  fastcgi_temp_path {home}/tmp;
  uwsgi_temp_path {home}/tmp;
  scgi_temp_path {home}/tmp;
  server {{ listen 127.0.0.1:{self.port}; root {root}; {server_extra} }}
}}
""")

    def start(self):
        self.process = subprocess.Popen([NGINX, "-p", self.home, "-c", "nginx.conf"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        for _ in range(100):
            if os.path.exists(os.path.join(self.home, "nginx.pid")):
                return
            time.sleep(0.05)

    def kill(self):
        """Gone mid-answer, as a crashed server: its open connections drop."""
        self.process.kill()
        self.process.wait(timeout=20)
        self.process = None
        os.remove(os.path.join(self.home, "nginx.pid"))

    def stop(self):
        if self.process:
            self.process.terminate()
            self.process.wait(timeout=20)
            self.process = None

    def gets(self):
        """The paths of the GET requests answered so far, with their status."""
        if not os.path.exists(self.log):
            return []
        return [(line.split('"')[1].split()[1], line.split('"')[2].split()[0])
                for line in open(self.log) if '"GET ' in line]

    def full_gets(self, paths):
        """The whole-shard GETs (200) answered for `paths`, in order."""
        return [path for path, status in self.gets() if status == "200" and path in paths]


FMNIST = "/usr/share/datasets/fashion-mnist"


def served_shards(source):
    """experiments/make_shards.py's shards in a fresh folder nginx's worker (nobody) can read:
    (tmp, shards), or the exit code of a test that cannot run here (77: skipped)."""
    if not os.path.isdir(FMNIST):
        print(f"SKIP: {FMNIST} missing (apt-get install dataset-fashion-mnist)")
        return 77
    if not os.path.exists(NGINX):
        if os.environ.get("CI") == "true":
            print("FAIL: CI must run the remote shards tests: nginx-light is not installed")
            return 1
        print("SKIP: nginx-light is not installed (make test installs it)")
        return 77
    tmp = tmpdir()
    os.chmod(tmp, 0o755)
    shards = os.path.join(tmp, "shards")
    subprocess.run([sys.executable, os.path.join(source, "experiments", "make_shards.py"), shards],
                   check=True, capture_output=True)
    return tmp, shards


def wait_for_gets(server, paths, count, process):
    """Until nginx has answered `count` whole GETs of `paths` (or `process` ended); how many."""
    for _ in range(1200):
        if len(server.full_gets(paths)) >= count or process.poll() is not None:
            break
        time.sleep(0.025)
    return len(server.full_gets(paths))
