/*
 * fork() support.
 *
 * Ciphers recover lazily: every context remembers the fork generation it was
 * opened in and, seeing a newer one, drops its (shared) kernel handles and
 * reopens from the key it keeps.  Running hashes cannot: their state lives
 * in the kernel and the parent may go on changing it, so each registers a
 * node here and gets a snapshot taken in the parent just before fork().
 *
 * Every mutex hwaf holds is an hwaf_mutex, registered here: the parent takes
 * them all (after fork_lock, which guards the lists) just before fork() and
 * releases them after it; the child initialises them afresh.  A child thus
 * never inherits a mutex some other thread of its parent held.
 */
#include <pthread.h>
#include "hwaf_local.h"
#include "hwaf_debug.h"

volatile unsigned int hwaf_fork_generation;

static pthread_mutex_t fork_lock = PTHREAD_MUTEX_INITIALIZER;
static hwaf_fork_node fork_head = { &fork_head, &fork_head, NULL, NULL, NULL };
static hwaf_mutex mutex_head = { PTHREAD_MUTEX_INITIALIZER, &mutex_head, &mutex_head };
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static int fork_ok;

static void fork_prepare(void)
{
    hwaf_fork_node *n;
    hwaf_mutex *m;

    pthread_mutex_lock(&fork_lock);
    for (n = fork_head.next; n != &fork_head; n = n->next)
        n->prepare(n);
    for (m = mutex_head.next; m != &mutex_head; m = m->next)
        pthread_mutex_lock(&m->m);
}

static void fork_parent(void)
{
    hwaf_fork_node *n;
    hwaf_mutex *m;

    for (m = mutex_head.prev; m != &mutex_head; m = m->prev)
        pthread_mutex_unlock(&m->m);
    for (n = fork_head.next; n != &fork_head; n = n->next)
        n->parent(n);
    pthread_mutex_unlock(&fork_lock);
}

static void fork_child(void)
{
    hwaf_fork_node *n;
    hwaf_mutex *m;

    __atomic_add_fetch(&hwaf_fork_generation, 1, __ATOMIC_SEQ_CST);
    for (m = mutex_head.next; m != &mutex_head; m = m->next)
        pthread_mutex_init(&m->m, NULL);
    hwaf_stats_forked();
    hwaf_sandbox_forked();
    for (n = fork_head.next; n != &fork_head; n = n->next)
        n->child(n);
    pthread_mutex_init(&fork_lock, NULL);
}

static void fork_setup(void)
{
    /* The module is linked -z nodelete, so these stay valid. */
    fork_ok = pthread_atfork(fork_prepare, fork_parent, fork_child) == 0;
}

int hwaf_fork_init(void)
{
    pthread_once(&fork_once, fork_setup);
    return fork_ok;
}

void hwaf_fork_register(hwaf_fork_node *n)
{
    pthread_mutex_lock(&fork_lock);
    n->next = fork_head.next;
    n->prev = &fork_head;
    fork_head.next->prev = n;
    fork_head.next = n;
    pthread_mutex_unlock(&fork_lock);
}

void hwaf_fork_unregister(hwaf_fork_node *n)
{
    /* Neighbours rewrite n->next under the lock: read it only there. */
    pthread_mutex_lock(&fork_lock);
    if (n->next != NULL) {
        n->prev->next = n->next;
        n->next->prev = n->prev;
        n->next = n->prev = NULL;
    }
    pthread_mutex_unlock(&fork_lock);
}

/* ---- fork-safe mutexes ---- */

static void mutex_register(hwaf_mutex *m)
{
    pthread_mutex_lock(&fork_lock);
    if (m->next == NULL) {
        hwaf_mutex *first = mutex_head.next;

        m->prev = &mutex_head;
        first->prev = m;
        mutex_head.next = m;
        __atomic_store_n(&m->next, first, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&fork_lock);
}

void hwaf_mutex_init(hwaf_mutex *m)
{
    pthread_mutex_init(&m->m, NULL);
    m->next = m->prev = NULL;
    mutex_register(m);
}

void hwaf_mutex_destroy(hwaf_mutex *m)
{
    pthread_mutex_lock(&fork_lock);
    if (m->next != NULL) {
        m->prev->next = m->next;
        m->next->prev = m->prev;
        m->next = m->prev = NULL;
    }
    pthread_mutex_unlock(&fork_lock);
    pthread_mutex_destroy(&m->m);
}

void hwaf_mutex_lock(hwaf_mutex *m)
{
    if (__atomic_load_n(&m->next, __ATOMIC_ACQUIRE) == NULL)
        mutex_register(m);
    pthread_mutex_lock(&m->m);
}

void hwaf_mutex_unlock(hwaf_mutex *m)
{
    pthread_mutex_unlock(&m->m);
}
