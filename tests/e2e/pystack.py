"""Intent: reports from a Python process show the Python frames of both stacks, taken while
ctypes has released the GIL: the CPU read's (in the guard-fault handler, on the main thread and
on a threading.Thread) and the launch's and the free's (in the interposer). The lines marked
"# site:" are the ones pystack_check.py expects in the reports."""
import ctypes
import sys
import threading

N = 64 * 1024


class Engine:
    def __init__(self, path):
        self.h = ctypes.CDLL(path)
        self.h.pysh_setup.restype = ctypes.c_void_p
        self.h.pysh_setup.argtypes = [ctypes.c_size_t]
        self.h.pysh_launch.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self.h.pysh_read.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self.h.pysh_free.argtypes = [ctypes.c_void_p]
        self.host = self.h.pysh_setup(N)
        if not self.host:
            sys.exit("setup failed")

    def launch_copy(self):
        return self.h.pysh_launch(self.host, N)  # site: launch

    def sync(self):
        self.h.pysh_sync()


def read_back(engine):
    return engine.h.pysh_read(engine.host, 4096)  # site: read


def read_in_thread(engine):
    t = threading.Thread(target=read_back_threaded, args=(engine,))
    t.start()
    t.join()


def read_back_threaded(engine):
    engine.h.pysh_read(engine.host, 4096)  # site: thread-read


def free_early(engine):
    engine.h.pysh_free(engine.host)  # site: free


def main():
    engine = Engine(sys.argv[1])
    if engine.launch_copy() != 0:
        sys.exit("launch failed")
    read_back(engine)
    engine.sync()
    engine.launch_copy()
    read_in_thread(engine)
    engine.sync()
    engine.launch_copy()
    free_early(engine)
    print("pystack done")


main()
