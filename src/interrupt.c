/* interrupt.c — Ctrl-C for runs: while installed, SIGINT asks every run in
 * progress to stop (oar_executor_cancel for all of them) instead of killing
 * the process. The handler only stores to an atomic flag, which executors
 * check between ops and between while iterations. */
#include <signal.h>
#include <string.h>
#include "error.h"
#include "bounded.h"

int oar_interrupt_flag = 0;           /* __atomic access only */
static struct sigaction g_previous;
static int g_installed = 0;

static void on_sigint(int sig)
{
    (void)sig;
    __atomic_store_n(&oar_interrupt_flag, 1, __ATOMIC_RELAXED);
}

void oar_interrupt_runs(void)
{
    __atomic_store_n(&oar_interrupt_flag, 1, __ATOMIC_RELAXED);
}

int oar_sigint_cancels_runs(int on)
{
    if (on && !g_installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigint;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGINT, &sa, &g_previous) != 0) return oar_error(OAR_ERR_IO, "cannot install a SIGINT handler");
        g_installed = 1;
    } else if (!on && g_installed) {
        if (sigaction(SIGINT, &g_previous, NULL) != 0) return oar_error(OAR_ERR_IO, "cannot restore the SIGINT handler");
        g_installed = 0;
    }
    return OAR_OK;
}

int oar_interrupt_pending(void) { return __atomic_load_n(&oar_interrupt_flag, __ATOMIC_RELAXED); }
void oar_interrupt_clear(void) { __atomic_store_n(&oar_interrupt_flag, 0, __ATOMIC_RELAXED); }
