/* launcher_tree.h - the launcher's private directory and the tree summary
 * (launcher_tree.c); the record format is written by checker/tree.c. */
#ifndef HC_LAUNCHER_TREE_H
#define HC_LAUNCHER_TREE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct hc_tree {
  char dir[4096];            /* <tmpdir>/heapcheck.XXXXXX, mode 0700 */
  char records[4200];        /* <dir>/processes */
} hc_tree_t;

typedef struct hc_proc {
  long pid;
  unsigned long long bytes, objects;
  bool incomplete;           /* its check could not complete */
  bool pending;              /* walled in, and no record of its own came (counted incomplete) */
  char *report;              /* log file path or "stderr" */
  char *cmdline;
} hc_proc_t;

typedef struct hc_tree_summary {
  hc_proc_t *procs;
  size_t nprocs;             /* processes that recorded their check */
  size_t leaking;            /* of which leaked */
  size_t incomplete;         /* of which could not complete their check */
  unsigned long long bytes, objects;
} hc_tree_summary_t;

const char *hc_tree_tmpdir(void);
/* Creates the directory and an empty records file; -1 with errno. */
int hc_tree_create(hc_tree_t *t);
/* Reads every record (malformed lines are skipped). */
void hc_tree_read(const hc_tree_t *t, hc_tree_summary_t *s);
/* Whether a record of process pid was read. */
bool hc_tree_has(const hc_tree_summary_t *s, long pid);
/* The summary: one line when nothing leaked and every check completed, else
 * a line per leaking process and per check that could not complete. */
void hc_tree_print(const hc_tree_t *t, const hc_tree_summary_t *s, FILE *out);
/* Removes the reports of processes that did not leak, and the directory when
 * nothing is left worth keeping. */
void hc_tree_cleanup(hc_tree_t *t, hc_tree_summary_t *s);
/* Removes the (still empty) directory. */
void hc_tree_remove(hc_tree_t *t);
#endif
