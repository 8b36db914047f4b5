/* mascarpone's MPI runtime, included in each generated kernel (all of it static).
 *
 * A message is a list of runs of consecutive elements in the rank's own storage,
 * built by the kernel's scans of the exact element sets. One run is sent or
 * received in place; several become one MPI struct datatype over their
 * addresses (MPI_BOTTOM), so nothing is packed by hand. Each kernel call counts
 * what its messages carry; the counts of every rank are gathered at the end. */
#include <limits.h>
#include <stdio.h>

typedef struct { char *addr; int64_t count; MPI_Datatype type; int64_t size; } ms_run;
typedef struct { ms_run *runs; int64_t n, cap; int64_t bytes; } ms_runs;
typedef struct { MPI_Request *reqs; int64_t n, cap; } ms_requests;
/* bytes sent, bytes received, messages sent, messages received */
typedef struct { int64_t sent, received, messages_sent, messages_received; } ms_counters;
/* what a kernel keeps on a communicator it is called with: its own duplicate (so that its tags never
   meet the caller's messages) and the number of ranks sharing this rank's node */
typedef struct { MPI_Comm comm; int node_ranks; } ms_comm_state;

static void ms_fail(const char *what) {
    fprintf(stderr, "mascarpone MPI runtime: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

static void *ms_grow(void *p, int64_t *cap, int64_t need, size_t elem) {
    if (need <= *cap) return p;
    int64_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *q = realloc(p, (size_t)c * elem);
    if (q == NULL) ms_fail("out of memory for a message description");
    *cap = c;
    return q;
}

/* append `count` elements at `addr` (merged with the last run when they follow it) */
static void ms_run_add(ms_runs *r, const void *addr, int64_t count, MPI_Datatype type, int64_t size) {
    if (count <= 0) return;
    char *a = (char *)addr;
    r->bytes += count * size;
    if (r->n > 0) {
        ms_run *last = &r->runs[r->n - 1];
        if (last->type == type && last->addr + last->count * size == a) {
            last->count += count;
            return;
        }
    }
    r->runs = (ms_run *)ms_grow(r->runs, &r->cap, r->n + 1, sizeof(ms_run));
    r->runs[r->n].addr = a;
    r->runs[r->n].count = count;
    r->runs[r->n].type = type;
    r->runs[r->n].size = size;
    r->n++;
}

/* start sending (or receiving) the runs to (from) `peer`; the list is emptied */
static void ms_post(ms_runs *r, int peer, int tag, int sending, MPI_Comm comm, ms_requests *q, ms_counters *c) {
    if (r->n == 0) return;
    MPI_Request req;
    if (r->n == 1 && r->runs[0].count <= INT_MAX) {
        ms_run *x = &r->runs[0];
        if (sending) MPI_Isend(x->addr, (int)x->count, x->type, peer, tag, comm, &req);
        else MPI_Irecv(x->addr, (int)x->count, x->type, peer, tag, comm, &req);
    } else {
        int64_t blocks = 0;
        for (int64_t k = 0; k < r->n; k++) blocks += (r->runs[k].count + INT_MAX - 1) / INT_MAX;
        if (blocks > INT_MAX) ms_fail("a message of more than INT_MAX runs");
        int *len = (int *)malloc((size_t)blocks * sizeof(int));
        MPI_Aint *disp = (MPI_Aint *)malloc((size_t)blocks * sizeof(MPI_Aint));
        MPI_Datatype *types = (MPI_Datatype *)malloc((size_t)blocks * sizeof(MPI_Datatype));
        if (!len || !disp || !types) ms_fail("out of memory for a message datatype");
        int64_t b = 0;
        for (int64_t k = 0; k < r->n; k++) {
            ms_run *x = &r->runs[k];
            for (int64_t done = 0; done < x->count; done += INT_MAX, b++) {
                int64_t left = x->count - done;
                len[b] = (int)(left < INT_MAX ? left : INT_MAX);
                MPI_Get_address(x->addr + done * x->size, &disp[b]);
                types[b] = x->type;
            }
        }
        MPI_Datatype t;
        MPI_Type_create_struct((int)blocks, len, disp, types, &t);
        MPI_Type_commit(&t);
        if (sending) MPI_Isend(MPI_BOTTOM, 1, t, peer, tag, comm, &req);
        else MPI_Irecv(MPI_BOTTOM, 1, t, peer, tag, comm, &req);
        MPI_Type_free(&t);   /* freed once the message is done */
        free(len);
        free(disp);
        free(types);
    }
    q->reqs = (MPI_Request *)ms_grow(q->reqs, &q->cap, q->n + 1, sizeof(MPI_Request));
    q->reqs[q->n++] = req;
    if (sending) {
        c->sent += r->bytes;
        c->messages_sent++;
    } else {
        c->received += r->bytes;
        c->messages_received++;
    }
    r->n = 0;
    r->bytes = 0;
}

static void ms_wait_all(ms_requests *q) {
    if (q->n > 0) MPI_Waitall((int)q->n, q->reqs, MPI_STATUSES_IGNORE);
    q->n = 0;
}

/* a kernel-wide buffer kept from call to call in `*slot` (grown when a call needs more): the pages of a
   large temporary are not faulted in again on every call */
static void *ms_keep(void **slot, size_t *have, size_t bytes) {
    if (bytes == 0) bytes = 1;
    if (*have < bytes) {
        free(*slot);
        *slot = malloc(bytes);
        *have = *slot != NULL ? bytes : 0;
    }
    return *slot;
}

/* whether `failed` holds on any rank (every rank calls it at the same point) */
static int ms_any_failed(MPI_Comm comm, int failed) {
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, comm);
    return any;
}

static int ms_free_state(MPI_Comm user, int keyval, void *value, void *extra) {
    (void)user; (void)keyval; (void)extra;
    ms_comm_state *s = (ms_comm_state *)value;
    MPI_Comm_free(&s->comm);
    free(s);
    return MPI_SUCCESS;
}

/* the kernel's state on `user` (made on the first call with it: every rank calls at once) */
static ms_comm_state *ms_state(MPI_Comm user, int *keyval) {
    if (*keyval == MPI_KEYVAL_INVALID)
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, ms_free_state, keyval, NULL);
    void *value = NULL;
    int found = 0;
    MPI_Comm_get_attr(user, *keyval, &value, &found);
    if (found) return (ms_comm_state *)value;
    ms_comm_state *s = (ms_comm_state *)malloc(sizeof(ms_comm_state));
    if (s == NULL) ms_fail("out of memory");
    MPI_Comm_dup(user, &s->comm);
    MPI_Comm node;
    MPI_Comm_split_type(s->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &s->node_ranks);
    MPI_Comm_free(&node);
    MPI_Comm_set_attr(user, *keyval, s);
    return s;
}

/* threads of a parallel loop when the caller set none: this node's cores shared among its ranks */
static int32_t ms_node_threads(const ms_comm_state *s) {
#ifdef _OPENMP
    int n = omp_get_num_procs() / (s->node_ranks > 0 ? s->node_ranks : 1);
    return n > 0 ? n : 1;
#else
    (void)s;
    return 1;
#endif
}

/* every rank's [status, counters] after a call, kept for NAME_stats; returns the largest status */
static int32_t ms_gather(MPI_Comm comm, int32_t status, const ms_counters *c, int64_t **table, int *ranks) {
    int n;
    MPI_Comm_size(comm, &n);
    int64_t mine[5] = {status, c->sent, c->received, c->messages_sent, c->messages_received};
    int64_t *all = (int64_t *)realloc(*table, (size_t)n * 5 * sizeof(int64_t));
    if (all == NULL) ms_fail("out of memory for the counters");
    MPI_Allgather(mine, 5, MPI_INT64_T, all, 5, MPI_INT64_T, comm);
    *table = all;
    *ranks = n;
    int32_t worst = 0;
    for (int k = 0; k < n; k++)
        if (all[5 * k] > worst) worst = (int32_t)all[5 * k];
    return worst;
}
