/* The pod sandbox's process: holds the pod's namespaces and does nothing until stopped.
   Built static (gcc -static) into a one-file image; containerd asks for it by name. */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; exit(0); }

int main(void) {
  signal(SIGINT, stop);
  signal(SIGTERM, stop);
  for (;;) pause();
}
